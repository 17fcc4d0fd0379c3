// Shaping rules (operations.md "Delivery control"): the TypeBox schema of config/shaping.json, the merge of
// the built-in file with an operator file, rate parsing and validation. Pure: values in, ShapingError out.
import Type from 'typebox';
import { Compile } from 'typebox/compile';

export class ShapingError extends Error {}

const Rate = Type.Union([Type.Null(), Type.String()]);
const Note = Type.Optional(Type.String());
const Count = Type.Integer({ minimum: 1 });
const Action = Type.Union([Type.Literal('suspend'), Type.Literal('throttle'), Type.Literal('blocklist')]);

const LimitFields = { connections: Count, messages_per_connection: Count, rate: Rate };
const Reaction = Type.Object(
  {
    match: Type.String({ minLength: 1 }),
    action: Action,
    seconds: Type.Integer({ minimum: 1 }),
    /** optional: the reaction applies only to replies from this site */
    site: Type.Optional(Type.String({ minLength: 1 })),
    source: Note,
  },
  { additionalProperties: false },
);

const OptionalLimitFields = {
  connections: Type.Optional(Count),
  messages_per_connection: Type.Optional(Count),
  rate: Type.Optional(Rate),
};

function fileSchema(operator: boolean) {
  const Default = Type.Object(operator ? { ...OptionalLimitFields, source: Note } : { ...LimitFields, source: Note }, {
    additionalProperties: false,
  });
  const Site = Type.Object(
    {
      mx: operator
        ? Type.Optional(Type.Array(Type.String(), { minItems: 1 }))
        : Type.Array(Type.String(), { minItems: 1 }),
      ...OptionalLimitFields,
      source: Note,
    },
    { additionalProperties: false },
  );
  const Warmup = Type.Object(
    {
      schedule: operator
        ? Type.Optional(Type.Array(Type.Integer({ minimum: 0 }), { minItems: 1 }))
        : Type.Array(Type.Integer({ minimum: 0 }), { minItems: 1 }),
      source: Note,
    },
    { additionalProperties: false },
  );
  const fields = {
    _sources: Type.Optional(Type.Record(Type.String(), Type.String())),
    default: operator ? Type.Optional(Default) : Default,
    sites: operator ? Type.Optional(Type.Record(Type.String(), Site)) : Type.Record(Type.String(), Site),
    reactions: operator ? Type.Optional(Type.Array(Reaction)) : Type.Array(Reaction),
    warmup: operator ? Type.Optional(Warmup) : Warmup,
  };
  return Type.Object(fields, { additionalProperties: false });
}

const builtInCheck = Compile(fileSchema(false));
const operatorCheck = Compile(fileSchema(true));

/** Limits of one site for one source IP. `perMs` is the parsed `rate` (messages per millisecond) or null. */
export interface Limits {
  connections: number;
  messages_per_connection: number;
  rate: string | null;
  perMs: number | null;
}
export interface SiteRule {
  name: string;
  mx: readonly string[];
  limits: Limits;
}
export interface Reaction {
  match: RegExp;
  pattern: string;
  action: 'suspend' | 'throttle' | 'blocklist';
  seconds: number;
  site?: string;
}
export interface Shaping {
  default: Limits;
  /** in match order: operator-only sites first, then the built-in ones (operator fields merged in) */
  sites: readonly SiteRule[];
  /** in match order: the operator's, then the built-in ones */
  reactions: readonly Reaction[];
  warmup: { schedule: readonly number[] };
  /** the limits of a site by name; a site not in the rules (named by its MX hosts) gets `default` */
  limitsOf(site: string): Limits;
}

const UNIT_MS: Record<string, number> = { s: 1_000, min: 60_000, h: 3_600_000, d: 86_400_000 };

/** "N/s", "N/min", "N/h", "N/d" → messages per millisecond; null stays null (no cap). Throws naming `field`. */
export function parseRate(rate: string | null, field = 'rate'): number | null {
  if (rate === null) return null;
  const m = /^([1-9][0-9]{0,8})\/(s|min|h|d)$/.exec(rate.trim());
  if (!m)
    throw new ShapingError(
      `${field}: invalid rate ${JSON.stringify(rate)}: expected null or "N/s", "N/min", "N/h", "N/d"`,
    );
  return Number(m[1]) / UNIT_MS[m[2]];
}

interface TbError {
  keyword: string;
  instancePath: string;
  params: Record<string, unknown>;
  message: string;
}

function fieldOf(instancePath: string, child?: string): string {
  const parts = instancePath
    .split('/')
    .filter(Boolean)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (child !== undefined) parts.push(child);
  return parts.map((p, i) => (/^\d+$/.test(p) ? `[${p}]` : i === 0 ? p : `.${p}`)).join('') || '(file)';
}

function schemaError(which: string, errors: TbError[]): ShapingError {
  const extra = errors.find((e) => e.keyword === 'additionalProperties');
  if (extra)
    return new ShapingError(
      `${which}: unknown field ${fieldOf(extra.instancePath, (extra.params.additionalProperties as string[])[0])}`,
    );
  const req = errors.find((e) => e.keyword === 'required');
  if (req)
    return new ShapingError(
      `${which}: ${fieldOf(req.instancePath, (req.params.requiredProperties as string[])[0])} is required`,
    );
  const e =
    [...errors].sort((a, b) => b.instancePath.length - a.instancePath.length).find((x) => x.keyword !== 'anyOf') ??
    errors[0];
  const last = e.instancePath.split('/').pop() ?? '';
  return new ShapingError(
    `${which}: ${fieldOf(e.instancePath)} ${HINTS[last] ?? (e.instancePath ? e.message : 'must be a JSON object')}`,
  );
}

const HINTS: Record<string, string> = {
  action: 'must be "suspend", "throttle" or "blocklist"',
  rate: 'must be null or a string "N/s", "N/min", "N/h" or "N/d"',
};

type File = {
  default?: Record<string, unknown>;
  sites?: Record<string, Record<string, unknown>>;
  reactions?: Record<string, unknown>[];
  warmup?: Record<string, unknown>;
};

function checked(which: string, value: unknown, operator: boolean): File {
  const c = operator ? operatorCheck : builtInCheck;
  if (c.Check(value)) return value as File;
  throw schemaError(which, [...c.Errors(value)] as TbError[]);
}

const SITE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const LABEL = /^(\*|[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)$/;

/** An MX pattern: dot-separated labels, each a host label or `*` (one or more labels), at least one literal. */
export function mxPatternProblem(p: string): string | null {
  const labels = p.toLowerCase().replace(/\.$/, '').split('.');
  if (labels.some((l) => !LABEL.test(l)))
    return `invalid MX pattern ${JSON.stringify(p)}: labels are host labels or "*"`;
  if (labels.every((l) => l === '*'))
    return `invalid MX pattern ${JSON.stringify(p)}: needs at least one literal label`;
  return null;
}

function limitsFrom(raw: Record<string, unknown>, base: Limits | null, field: string): Limits {
  const pick = <K extends keyof Limits>(k: K) => (raw[k] !== undefined ? raw[k] : base?.[k]) as Limits[K];
  const rate = pick('rate') ?? null;
  return {
    connections: pick('connections'),
    messages_per_connection: pick('messages_per_connection'),
    rate,
    perMs: parseRate(rate, `${field}.rate`),
  };
}

function compileReaction(r: Record<string, unknown>, field: string, siteNames: Set<string>): Reaction {
  let match: RegExp;
  try {
    match = new RegExp(r.match as string, 'i');
  } catch (err) {
    throw new ShapingError(`${field}.match: invalid regular expression: ${(err as Error).message}`);
  }
  if (r.site !== undefined && !siteNames.has(r.site as string))
    throw new ShapingError(`${field}.site: no site named ${JSON.stringify(r.site)}`);
  const out: Reaction = {
    match,
    pattern: r.match as string,
    action: r.action as Reaction['action'],
    seconds: r.seconds as number,
  };
  if (r.site !== undefined) out.site = r.site as string;
  return out;
}

function mergeSites(builtIn: File, operator: File | undefined, def: Limits): SiteRule[] {
  const op = operator?.sites ?? {};
  const bi = builtIn.sites ?? {};
  for (const name of [...Object.keys(bi), ...Object.keys(op)]) {
    if (!SITE_NAME.test(name))
      throw new ShapingError(`sites.${name}: invalid site name (letters, digits, ".", "_", "-"; no ",")`);
  }
  const build = (name: string, from: string): SiteRule => {
    const raw = { ...(bi[name] ?? {}), ...(op[name] ?? {}) };
    const field = `${from}: sites.${name}`;
    if (!Array.isArray(raw.mx)) throw new ShapingError(`${field}.mx is required for a new site`);
    const mx = (raw.mx as string[]).map((p) => p.toLowerCase().replace(/\.$/, ''));
    for (const p of mx) {
      const bad = mxPatternProblem(p);
      if (bad) throw new ShapingError(`${field}.mx: ${bad}`);
    }
    return { name, mx, limits: limitsFrom(raw, def, field) };
  };
  const added = Object.keys(op)
    .filter((n) => !(n in bi))
    .map((n) => build(n, 'operator file'));
  return [...added, ...Object.keys(bi).map((n) => build(n, n in op ? 'operator file' : 'built-in file'))];
}

/**
 * Validates the built-in rules and an optional operator file of the same shape and merges them: sites by
 * name field by field (new operator sites match first), operator reactions before the built-in ones,
 * `default` and `warmup` replaced field by field. Throws ShapingError naming the file and field at fault.
 */
export function loadShaping(builtIn: unknown, operator?: unknown): Shaping {
  const bi = checked('built-in shaping file', builtIn, false);
  const op = operator === undefined || operator === null ? undefined : checked('operator shaping file', operator, true);
  const defRaw = { ...bi.default, ...op?.default };
  const def = limitsFrom(
    defRaw,
    null,
    `${op?.default?.rate !== undefined ? 'operator file' : 'built-in file'}: default`,
  );
  const sites = mergeSites(bi, op, def);
  const names = new Set(sites.map((s) => s.name));
  const reactions = [
    ...(op?.reactions ?? []).map((r, i) => compileReaction(r, `operator file: reactions[${i}]`, names)),
    ...(bi.reactions ?? []).map((r, i) => compileReaction(r, `built-in file: reactions[${i}]`, names)),
  ];
  const schedule = ((op?.warmup?.schedule ?? bi.warmup?.schedule) as number[]).slice();
  const byName = new Map(sites.map((s) => [s.name, s.limits]));
  return { default: def, sites, reactions, warmup: { schedule }, limitsOf: (site) => byName.get(site) ?? def };
}
