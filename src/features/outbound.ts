// The outbound feature: the delivery loop as a component (claims, sites and shaping, MX, SMTP, DKIM, retries,
// test-mode simulation, delivery control); `ext.outbound` exposes it (wake, stats); its metrics join /metrics.
import type { FeatureFactory } from './feature.js';
import { createOutbound } from '../outbound/index.js';
import { addMetricsRegistry } from '../http/metrics.js';
import { onEvent, setIntake } from '../services/delivery.js';
import { afterWrites, currentTurn, isHttpWorker, onNudge } from '../services/siblings.js';

export const feature: FeatureFactory = (ctx) => {
  // An HTTP worker leases new recipients due now to the primary's loop and sends them after the commit
  // (http/cluster-intake.ts); it wakes that loop only for the rest (unleased: scheduled, no credit), which it claims.
  if (isHttpWorker(ctx)) {
    const intake = ctx.siblings!.intake;
    if (intake) setIntake(ctx.db, intake);
    // Per turn: its new emails, looked at once its COMMIT is in (a turn may still be gathering while the one before
    // it is on the server, so each keeps its own list).
    const byTurn = new Map<object | undefined, number[]>();
    onEvent(ctx.db, (_db, ev) => {
      if (ev.type !== 'queued') return;
      const turn = currentTurn(ctx.db);
      let seqs = byTurn.get(turn);
      if (!seqs) {
        const mine: number[] = (seqs = []);
        byTurn.set(turn, mine);
        afterWrites(ctx.db, () => {
          byTurn.delete(turn);
          if (mine.some((seq) => !intake?.handed(seq))) ctx.siblings!.nudge('delivery');
        });
      }
      seqs.push(ev.email_seq);
    });
    return {};
  }
  const loop = createOutbound(ctx);
  onNudge(ctx.db, 'delivery', () => loop.wake());
  if (loop.control) addMetricsRegistry(ctx.db, loop.control.registry);
  return { components: [loop], ext: { outbound: loop } };
};
