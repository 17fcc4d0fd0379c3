// Messages between the delivery loop and its worker thread, sent in batches: whatever one side posts in one
// event-loop turn leaves as one postMessage (an array), so a message's fixed cost (serializer, port lock, the other
// thread's wake-up) is paid once per turn rather than once per email and per transaction.
interface Port {
  postMessage(value: unknown, transferList?: readonly ArrayBuffer[]): void;
}

export class BatchPort<T> {
  private items: T[] = [];
  private transfer: ArrayBuffer[] = [];
  private queued = false;

  constructor(private port: Port) {}

  post(m: T, transfer?: ArrayBuffer): void {
    this.items.push(m);
    if (transfer) this.transfer.push(transfer);
    if (this.queued) return;
    this.queued = true;
    setImmediate(() => this.flush());
  }

  flush(): void {
    this.queued = false;
    if (this.items.length === 0) return;
    const items = this.items;
    const transfer = this.transfer;
    this.items = [];
    this.transfer = [];
    this.port.postMessage(items, transfer);
  }
}
