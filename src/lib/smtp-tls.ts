// The SMTP listeners' certificate and key (MTA_SMTP_TLS_KEY_FILE, MTA_SMTP_TLS_CERT_FILE), shared by the inbound and
// submission listeners: read at start, and read again on SIGHUP (a renewed certificate) without a restart.
import type { Logger } from 'pino';
import type { SMTPServer, SMTPServerOptions } from 'smtp-server';
import { readTlsPair } from '../config/check.js';
import type { Config } from '../config/schema.js';

/** The listener's TLS options: the configured pair, or none (smtp-server's bundled self-signed certificate). */
export const tlsOptions = (cfg: Config): Partial<SMTPServerOptions> => readTlsPair(cfg) ?? {};

/**
 * SIGHUP: reads the files again and gives the pair to the servers' next TLS handshakes (STARTTLS and implicit TLS);
 * sessions already open keep theirs. A file that cannot be read, is no PEM or is not of one pair with the other keeps
 * the pair in use, logged at error level naming the variable and the file.
 */
export function reloadTls(servers: SMTPServer[], cfg: Config, log: Logger): void {
  if (!cfg.smtpTlsKeyFile || !cfg.smtpTlsCertFile) return;
  let pair: { key: Buffer; cert: Buffer };
  try {
    pair = readTlsPair(cfg)!;
  } catch (err) {
    log.error(`TLS certificate not reloaded, the one in use stays: ${(err as Error).message}`);
    return;
  }
  for (const s of servers) s.updateSecureContext(pair);
  log.info({ cert: cfg.smtpTlsCertFile, key: cfg.smtpTlsKeyFile }, 'TLS certificate reloaded');
}
