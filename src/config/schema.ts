// Every setting of the service, as a TypeBox schema, with the MTA_* variable that overrides it.
// Pure: no reads of files or the environment here (see load.ts).
import Type, { type Static } from 'typebox';

const Port = Type.Integer({ minimum: 0, maximum: 65535 });
const Seconds = Type.Number({ exclusiveMinimum: 0 });

export const ConfigSchema = Type.Object(
  {
    dataDir: Type.String({ minLength: 1 }),
    sqliteSynchronous: Type.Union([Type.Literal('FULL'), Type.Literal('NORMAL')]),
    /** postgres://… puts the store on PostgreSQL (several nodes may share it); unset keeps SQLite in dataDir. */
    databaseUrl: Type.Optional(Type.String({ pattern: '^postgres(ql)?://[^\\s]+$' })),
    httpHost: Type.String({ minLength: 1 }),
    /**
     * Retired (the HTTP workers, 2026-11-30): accepted with any value and ignored, so that an upgrade does not fail
     * over them; a warning at start names them (config/check.ts).
     */
    httpWorkers: Type.Optional(Type.Unknown()),
    httpLeaseMs: Type.Optional(Type.Unknown()),
    httpPort: Port,
    smtpHost: Type.String({ minLength: 1 }),
    smtpPort: Port,
    /** SMTP submission listener (STARTTLS, AUTH with an API key): address, port, optional implicit-TLS port. */
    submissionHost: Type.String({ minLength: 1 }),
    submissionPort: Port,
    submissionsPort: Type.Optional(Port),
    /** Largest message as built (API, batch or SMTP submission), bytes. */
    maxMessageBytes: Type.Integer({ minimum: 1024 }),
    publicUrl: Type.String({ pattern: '^https?://[^\\s]+$' }),
    docsUrl: Type.String({ pattern: '^https?://[^\\s]+$' }),
    hostname: Type.String({ minLength: 1, pattern: '^[A-Za-z0-9.-]+$' }),
    dnsServers: Type.Array(Type.String({ pattern: '^(\\[[0-9a-fA-F:.]+\\]|[0-9a-fA-F:.]+)(:[0-9]{1,5})?$' })),
    outboundPort: Port,
    outboundTls: Type.Union([Type.Literal('opportunistic'), Type.Literal('required'), Type.Literal('off')]),
    /** Honour recipient domains' MTA-STS policies (RFC 8461; docs/outbound.md "Transport security"). */
    mtaSts: Type.Union([Type.Literal('on'), Type.Literal('off')]),
    /** Honour DANE TLSA records (RFC 7672) the resolver validates (AD bit); docs/outbound.md "Transport security". */
    dane: Type.Union([Type.Literal('on'), Type.Literal('off')]),
    /** Extra CAs (PEM) trusted for MTA-STS policy fetches and MX certificates, besides the system's. */
    tlsCaFile: Type.Optional(Type.String({ minLength: 1 })),
    /** Port of the MTA-STS policy fetch (a test hook; the name and SNI stay mta-sts.<domain>). */
    stsHttpsPort: Port,
    /** Send daily TLS reports (RFC 8460; docs/outbound.md "TLS reporting"), when, and from which address by mail. */
    tlsrpt: Type.Union([Type.Literal('on'), Type.Literal('off')]),
    tlsrptCron: Type.String({ minLength: 1 }),
    tlsrptFrom: Type.Optional(Type.String({ pattern: '^[^\\s@]+@[A-Za-z0-9.-]+$' })),
    outboundConcurrency: Type.Integer({ minimum: 1 }),
    outboundPerDomainConcurrency: Type.Integer({ minimum: 1 }),
    outboundMessagesPerConnection: Type.Integer({ minimum: 1 }),
    outboundTimeoutSeconds: Seconds,
    bounceDomain: Type.String({ minLength: 1, pattern: '^[A-Za-z0-9.-]+$' }),
    logLevel: Type.Union(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l))),
    allowPrivateWebhooks: Type.Boolean(),
    rateLimit: Type.Number({ minimum: 0 }),
    rateBurst: Type.Number({ minimum: 1 }),
    retryMinSeconds: Seconds,
    retryMaxSeconds: Seconds,
    queueLifetimeSeconds: Seconds,
    /** Message content (bodies, attachments, raw reports) kept this long after an email is final: live (default 30 days), test (24 hours). */
    contentRetentionDays: Type.Optional(Type.Number({ minimum: 0 })),
    testContentRetentionHours: Type.Optional(Type.Number({ minimum: 0 })),
    /** Raw copy and attachment bytes of mail received at teams' domains are kept this long (default 72 hours). */
    inboundRetentionHours: Type.Optional(Type.Number({ minimum: 0 })),
    statsRetentionDays: Type.Optional(Type.Number({ minimum: 1 })),
    webhookRetryMinSeconds: Seconds,
    inboundMaxBytes: Type.Integer({ minimum: 1024 }),
    /** Inbound listener: simultaneous connections (default 100) and an optional TLS key/cert (PEM files). */
    inboundMaxClients: Type.Optional(Type.Integer({ minimum: 1 })),
    /** Inbound listener: simultaneous connections from one client address (default 5), and the time one report may take to read (default 2000 ms). */
    inboundMaxClientsPerIp: Type.Optional(Type.Integer({ minimum: 1 })),
    inboundParseTimeoutMs: Type.Optional(Type.Integer({ minimum: 10 })),
    inboundMaxSessionSeconds: Seconds,
    submissionMaxSessionSeconds: Seconds,
    smtpTlsKeyFile: Type.Optional(Type.String({ minLength: 1 })),
    smtpTlsCertFile: Type.Optional(Type.String({ minLength: 1 })),
    dnsCheckCron: Type.String({ minLength: 1 }),
    dnsCheckTimeoutSeconds: Seconds,
    /** Sending-IP health check (operations.md "Deliverability insight"): its schedule, the DNSBL zones, and what a listing does. */
    ipCheckCron: Type.String({ minLength: 1 }),
    dnsblZones: Type.Array(Type.String({ minLength: 1, pattern: '^[A-Za-z0-9.-]+$' })),
    dnsblAction: Type.Union([Type.Literal('alert'), Type.Literal('suspend')]),
    /** The operator's endpoint for ip.alert and domain.alert events (services/alerts.ts), and its whsec_ secret. */
    alertWebhookUrl: Type.Optional(Type.String({ pattern: '^https?://' })),
    alertWebhookSecret: Type.Optional(Type.String({ pattern: '^whsec_[A-Za-z0-9+/]{16,}={0,2}$' })),
    maxBodyBytes: Type.Integer({ minimum: 1024 }),
    /** Request bodies being read or parsed at once (HTTP, SMTP submission DATA), bytes, per process (services/body-budget.ts). */
    maxInflightBodyBytes: Type.Integer({ minimum: 1024 }),
    sendingIps: Type.Array(Type.String({ minLength: 1 })),
    /** Per-team source IP pools: team id or name → IPs its mail leaves from (and its SPF lists); others use sendingIps. */
    ipPools: Type.Record(Type.String({ minLength: 1 }), Type.Array(Type.String({ minLength: 1 }), { minItems: 1 })),
    freeMonthlyCredits: Type.Integer({ minimum: 0 }),
    /**
     * Feedback-loop report signers (MTA_FBL_SOURCES): a DKIM d= domain (its subdomains too) or an address
     * (the report's From, signed by its domain). A complaint matched only by Message-ID acts only when so signed.
     */
    fblSources: Type.Array(
      Type.String({ pattern: "^([A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]+@)?[A-Za-z0-9-]+(\\.[A-Za-z0-9-]+)+$" }),
    ),
    /** Operator password of the dashboard (sign in as any team); empty disables operator sign-in. */
    dashboardPassword: Type.String(),
    /** Reverse proxies (IPs or CIDRs) whose X-Forwarded-For names the client of a dashboard sign-in; default none. */
    trustedProxies: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
    /** Bearer token GET /metrics requires; unset: /metrics answers loopback clients only. */
    metricsToken: Type.Optional(Type.String({ minLength: 16 })),
    /** Bearer token of the operator API under /admin/v1 (operations.md "Queue control"); unset: /admin is off (404). */
    adminToken: Type.Optional(Type.String({ minLength: 16 })),
    /** Operator shaping rules (MTA_SHAPING_FILE), merged over config/shaping.json (operations.md "Delivery control"). */
    shapingFile: Type.Optional(Type.String({ minLength: 1 })),
  },
  { additionalProperties: false },
);

export type Config = Static<typeof ConfigSchema>;
/** The shortest operator password accepted (a shorter non-empty one refuses to start). */
export const MIN_DASHBOARD_PASSWORD = 16;

type Kind = 'string' | 'int' | 'number' | 'bool' | 'list' | 'pools';
/** Environment variables (names fixed by operations.md) → setting and how to read it. */
export const ENV: Record<string, [keyof Config, Kind]> = {
  MTA_DATA_DIR: ['dataDir', 'string'],
  MTA_SQLITE_SYNCHRONOUS: ['sqliteSynchronous', 'string'],
  MTA_DATABASE_URL: ['databaseUrl', 'string'],
  MTA_HTTP_HOST: ['httpHost', 'string'],
  MTA_HTTP_PORT: ['httpPort', 'int'],
  MTA_SMTP_HOST: ['smtpHost', 'string'],
  MTA_SMTP_PORT: ['smtpPort', 'int'],
  MTA_SUBMISSION_HOST: ['submissionHost', 'string'],
  MTA_SUBMISSION_PORT: ['submissionPort', 'int'],
  MTA_SUBMISSIONS_PORT: ['submissionsPort', 'int'],
  MTA_MAX_MESSAGE_BYTES: ['maxMessageBytes', 'int'],
  MTA_PUBLIC_URL: ['publicUrl', 'string'],
  MTA_DOCS_URL: ['docsUrl', 'string'],
  MTA_HOSTNAME: ['hostname', 'string'],
  MTA_DNS_SERVERS: ['dnsServers', 'list'],
  MTA_OUTBOUND_PORT: ['outboundPort', 'int'],
  MTA_OUTBOUND_TLS: ['outboundTls', 'string'],
  MTA_MTA_STS: ['mtaSts', 'string'],
  MTA_DANE: ['dane', 'string'],
  MTA_TLS_CA_FILE: ['tlsCaFile', 'string'],
  MTA_STS_HTTPS_PORT: ['stsHttpsPort', 'int'],
  MTA_TLSRPT: ['tlsrpt', 'string'],
  MTA_TLSRPT_CRON: ['tlsrptCron', 'string'],
  MTA_TLSRPT_FROM: ['tlsrptFrom', 'string'],
  MTA_OUTBOUND_CONCURRENCY: ['outboundConcurrency', 'int'],
  MTA_OUTBOUND_PER_DOMAIN_CONCURRENCY: ['outboundPerDomainConcurrency', 'int'],
  MTA_OUTBOUND_MESSAGES_PER_CONNECTION: ['outboundMessagesPerConnection', 'int'],
  MTA_OUTBOUND_TIMEOUT_SECONDS: ['outboundTimeoutSeconds', 'number'],
  MTA_BOUNCE_DOMAIN: ['bounceDomain', 'string'],
  MTA_LOG_LEVEL: ['logLevel', 'string'],
  MTA_ALLOW_PRIVATE_WEBHOOKS: ['allowPrivateWebhooks', 'bool'],
  MTA_RATE_LIMIT: ['rateLimit', 'number'],
  MTA_HTTP_WORKERS: ['httpWorkers', 'string'],
  MTA_HTTP_LEASE_MS: ['httpLeaseMs', 'string'],
  MTA_RATE_BURST: ['rateBurst', 'number'],
  MTA_RETRY_MIN_SECONDS: ['retryMinSeconds', 'number'],
  MTA_RETRY_MAX_SECONDS: ['retryMaxSeconds', 'number'],
  MTA_QUEUE_LIFETIME_SECONDS: ['queueLifetimeSeconds', 'number'],
  MTA_CONTENT_RETENTION_DAYS: ['contentRetentionDays', 'number'],
  MTA_TEST_CONTENT_RETENTION_HOURS: ['testContentRetentionHours', 'number'],
  MTA_INBOUND_RETENTION_HOURS: ['inboundRetentionHours', 'number'],
  MTA_STATS_RETENTION_DAYS: ['statsRetentionDays', 'number'],
  MTA_WEBHOOK_RETRY_MIN_SECONDS: ['webhookRetryMinSeconds', 'number'],
  MTA_INBOUND_MAX_BYTES: ['inboundMaxBytes', 'int'],
  MTA_INBOUND_MAX_CLIENTS: ['inboundMaxClients', 'int'],
  MTA_INBOUND_MAX_CLIENTS_PER_IP: ['inboundMaxClientsPerIp', 'int'],
  MTA_INBOUND_PARSE_TIMEOUT_MS: ['inboundParseTimeoutMs', 'int'],
  MTA_INBOUND_MAX_SESSION_SECONDS: ['inboundMaxSessionSeconds', 'number'],
  MTA_SUBMISSION_MAX_SESSION_SECONDS: ['submissionMaxSessionSeconds', 'number'],
  MTA_SMTP_TLS_KEY_FILE: ['smtpTlsKeyFile', 'string'],
  MTA_SMTP_TLS_CERT_FILE: ['smtpTlsCertFile', 'string'],
  MTA_DNS_CHECK_CRON: ['dnsCheckCron', 'string'],
  MTA_DNS_CHECK_TIMEOUT_SECONDS: ['dnsCheckTimeoutSeconds', 'number'],
  MTA_IP_CHECK_CRON: ['ipCheckCron', 'string'],
  MTA_DNSBL_ZONES: ['dnsblZones', 'list'],
  MTA_DNSBL_ACTION: ['dnsblAction', 'string'],
  MTA_ALERT_WEBHOOK_URL: ['alertWebhookUrl', 'string'],
  MTA_ALERT_WEBHOOK_SECRET: ['alertWebhookSecret', 'string'],
  MTA_MAX_BODY_BYTES: ['maxBodyBytes', 'int'],
  MTA_MAX_INFLIGHT_BODY_BYTES: ['maxInflightBodyBytes', 'int'],
  MTA_SENDING_IPS: ['sendingIps', 'list'],
  MTA_IP_POOLS: ['ipPools', 'pools'],
  MTA_DASHBOARD_PASSWORD: ['dashboardPassword', 'string'],
  MTA_TRUSTED_PROXIES: ['trustedProxies', 'list'],
  MTA_METRICS_TOKEN: ['metricsToken', 'string'],
  MTA_ADMIN_TOKEN: ['adminToken', 'string'],
  MTA_FBL_SOURCES: ['fblSources', 'list'],
  MTA_SHAPING_FILE: ['shapingFile', 'string'],
};
