// Where an SMTP transaction runs: on the outbound worker thread when it is up (signer.ts), else on this thread's own
// SmtpClient (while the worker starts, or after it died). Same contract as SmtpClient.send: never throws.
import type { SmtpClient, SendOptions, SendResult, Target } from './smtp.js';
import type { SignerPool } from './signer.js';

export type Smtp = Pick<SmtpClient, 'send' | 'closeAll' | 'dropWaiting'>;

export class Transport implements Smtp {
  constructor(
    private local: SmtpClient,
    private worker: SignerPool | null,
  ) {}

  send(
    t: Target,
    from: string,
    rcpts: string[],
    raw: Buffer,
    deadline: number,
    source?: string,
    opt: SendOptions = {},
  ): Promise<SendResult> {
    // While the lane has sessions here (opened while the worker was not up), its sends stay here, waiting for one of
    // them when all are busy: the scheduler counts them among the lane's connections, so opening more on the worker
    // would exceed the lane's limit.
    const here = opt.pool !== undefined && this.local.hasOpen(opt.pool);
    return (
      (here ? null : this.worker?.send(t, from, rcpts, raw, deadline, source, opt)) ??
      this.local.send(t, from, rcpts, raw, deadline, source, opt)
    );
  }

  /** Sessions open, here and on the worker (as it last said). */
  get openConnections(): number {
    return this.local.openConnections + (this.worker?.smtpCounts.open ?? 0);
  }

  /** Pool keys with idle sessions, here and on the worker (as it last said). */
  get idlePools(): number {
    return this.local.idlePools + (this.worker?.smtpCounts.idlePools ?? 0);
  }

  dropWaiting(): void {
    this.worker?.dropWaiting();
    this.local.dropWaiting();
  }

  closeAll(): void {
    this.worker?.closeSmtp();
    this.local.closeAll();
  }
}
