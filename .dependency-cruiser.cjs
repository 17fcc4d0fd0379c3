// The dependency rule (docs/architecture.md), checked in CI by dependency-cruiser:
// core → core; store → core; services → store, core; adapters → services, core; only the composition root wires.
const ADAPTERS = '^src/(http|inbound|outbound|webhooks|jobs|submission|admin)/';
const LEAVES = '^src/(core|config)/|^src/log\\.ts$|^src/types/';
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'core-is-pure',
      comment: 'core imports only core (and pure npm packages); never node I/O modules',
      severity: 'error',
      from: { path: '^src/core/' },
      to: { pathNot: ['^src/core/', '^node_modules/'], dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'core-no-io',
      severity: 'error',
      from: { path: '^src/core/' },
      to: { path: '^(fs|net|tls|dns|http|https|child_process|worker_threads|dgram)$', dependencyTypes: ['core'] },
    },
    {
      name: 'store-imports-core',
      comment: 'the store speaks SQL and knows core types only',
      severity: 'error',
      from: { path: '^src/store/' },
      to: { path: '^src/', pathNot: ['^src/store/', LEAVES] },
    },
    {
      name: 'services-import-store-and-core',
      severity: 'error',
      from: { path: '^src/services/' },
      to: { path: '^src/', pathNot: ['^src/(services|store)/', LEAVES] },
    },
    {
      name: 'adapters-import-services-and-core',
      comment: 'adapters reach the store only through services, and never another adapter',
      severity: 'error',
      from: { path: ADAPTERS },
      to: { path: '^src/', pathNot: ['^src/services/', LEAVES, '^src/$1/'] },
    },
    { name: 'no-circular', severity: 'warn', from: {}, to: { circular: true } },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
};
