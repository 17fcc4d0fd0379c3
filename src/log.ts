// The pino root logger; modules take log.child({ component }). Secrets are redacted by path.
import pino, { type Logger } from 'pino';

export function createLogger(level: string, dest?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'mta' },
      redact: {
        paths: [
          'key',
          'apiKey',
          'secret',
          'privateKey',
          'private_key',
          'authorization',
          '*.authorization',
          'headers.authorization',
          'password',
        ],
        censor: '[redacted]',
      },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    dest ?? pino.destination({ fd: 2, sync: false }),
  );
}
