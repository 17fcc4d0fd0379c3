import type { BuildOptions } from 'esbuild';
export declare const workerBuild: BuildOptions;
