// A long-running part of the service (listener, scheduler, job): started in order and stopped in
// reverse by service.ts. A leaf type: any layer may implement it without importing the wiring.
export interface Component {
  name: string;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** SIGTERM's first step, on every component before any stop(): take no new work (the listeners). */
  quiesce?(): void;
  /** SIGHUP: re-read what it reads from files (the SMTP listeners' TLS certificate), keeping connections open. */
  reload?(): void;
  /** Listener address to announce, if it has one. */
  address?(): string | null;
}
