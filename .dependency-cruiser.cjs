// The dependency rule (docs/architecture.md), checked in CI by dependency-cruiser (.ci/run, test/unit/architecture.test.ts):
// core → core; store → core (+ leaf types); services → store, core; adapters → services, core; only the composition root wires.
const ADAPTERS = '^src/(http|inbound|outbound|webhooks|jobs|submission|admin)/';
/** Leaf modules every layer may import: pure core, configuration types, the logger, shared types. */
const LEAVES = '^src/(core|config|types)/|^src/log\\.ts$';
/** Helpers around third-party internals (src/lib/internals.ts: nodemailer and smtp-server private fields), for adapters. */
const LIB = '^src/lib/';
const NPM = '(^|/)node_modules/';
/** Node modules core may use: pure helpers only (hashing and HMAC, URL parsing, isIP and BlockList). */
const CORE_NODE = '^(crypto|url|net)$';
/** npm packages that do I/O or belong to one layer: never in core. */
const IO_PACKAGES = `${NPM}(better-sqlite3|koa|@koa|koa-bodyparser|nodemailer|smtp-server|mailauth|node-cron|pino|prom-client|rate-limiter-flexible)/`;
/** The composition root and the command line: they wire everything and are not checked. */
const WIRING = '^src/(main|service|features|cli)\\.ts$|^src/features/';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'core-is-pure',
      comment: 'core imports only core (type-only imports of leaves are fine) and pure npm packages',
      severity: 'error',
      from: { path: '^src/core/' },
      to: { pathNot: ['^src/core/', NPM, CORE_NODE], dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'core-no-io',
      comment:
        'core uses node:crypto, node:url and node:net (isIP, BlockList) only; no fs, sockets, DNS, child processes',
      severity: 'error',
      from: { path: '^src/core/' },
      to: { dependencyTypes: ['core'], pathNot: CORE_NODE },
    },
    {
      name: 'core-no-io-packages',
      severity: 'error',
      from: { path: '^src/core/' },
      to: { path: IO_PACKAGES },
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
      comment: 'adapters reach the store only through services, and never another adapter or the wiring',
      severity: 'error',
      from: { path: ADAPTERS },
      to: { path: '^src/', pathNot: ['^src/services/', LEAVES, LIB, '^src/$1/'] },
    },
    {
      name: 'lib-is-a-leaf',
      comment: 'src/lib wraps third-party packages and imports nothing of ours but leaves',
      severity: 'error',
      from: { path: LIB },
      to: { path: '^src/', pathNot: [LIB, LEAVES] },
    },
    {
      name: 'only-the-root-wires',
      comment: 'nothing but the composition root imports main.ts, service.ts, features or cli.ts',
      severity: 'error',
      from: { path: '^src/', pathNot: WIRING },
      to: { path: WIRING, dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'sql-only-in-store',
      comment: "the SQLite driver is the store's business",
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/store/' },
      to: { path: `${NPM}better-sqlite3/`, dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'resolvable',
      comment: 'an import the checker cannot resolve cannot be checked',
      severity: 'error',
      from: { path: '^src/' },
      to: { couldNotResolve: true },
    },
    // A cycle at run time (module evaluation order) is an error; one closed only by a type import is not (the
    // delivery loop and its control plane name each other's types).
    {
      name: 'no-circular',
      severity: 'error',
      from: {},
      to: { circular: true, viaOnly: { dependencyTypesNot: ['type-only'] } },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      extensions: ['.ts', '.js', '.mjs', '.cjs'],
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default'],
    },
  },
};
