// What the delivery loop needs of the store, in one place: the queue (claims under a lease, confirm,
// settle, release) and the next due time. Thin pass-throughs so src/outbound never imports src/store.
export {
  claimDue,
  confirmClaims,
  settleClaim,
  releaseClaims,
  nextDue,
  lightTx,
  wakeDomains,
  type Claimed,
} from '../store/queue.js';
export { emailBySeq, type EmailRow } from '../store/emails.js';
export { tx, type DB } from '../store/db.js';
export { secret } from '../store/settings.js';
export { onEvent } from '../store/events.js';
export { teamById } from '../store/teams.js';
