import type { Plugin } from 'esbuild';
export declare const verifyOnly: Plugin;
