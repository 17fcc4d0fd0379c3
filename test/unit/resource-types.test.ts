// The answers' schemas (src/http/resources) and the presenters that build the answers have the same types: tsc
// fails here when a presenter gains, loses or retypes a field its schema does not (the contract test, at run time,
// checks the same of every answer the integration suite receives).
import type { Static, TSchema } from 'typebox';
import { expect } from 'chai';
import { Email, Event } from '../../src/http/resources/emails.js';
import { ApiKey, CreditBalance, Suppression } from '../../src/http/resources/account.js';
import { Domain } from '../../src/http/resources/domains.js';
import { WebhookDelivery, WebhookEndpoint } from '../../src/http/resources/webhooks.js';
import { Stats } from '../../src/http/resources/stats.js';
import { presentEmail, presentEvent, presentKey, presentSuppression } from '../../src/services/present.js';
import { presentDomain } from '../../src/services/present-domain.js';
import { presentEndpoint, presentOutboxRow } from '../../src/services/webhooks.js';
import type { balance } from '../../src/services/credits.js';
import type { Stats as StatsAnswer } from '../../src/services/stats.js';

/** True when the presenter's answer is of the schema's type and has no top-level field the schema lacks. */
type Fits<S extends TSchema, A> =
  A extends Static<S> ? ([Exclude<keyof A, keyof Static<S>>] extends [never] ? true : false) : false;
type Answer<F extends (...a: never[]) => unknown> = ReturnType<F>;

const checks: true[] = [
  true as Fits<typeof Email, Answer<typeof presentEmail>>,
  true as Fits<typeof Event, Answer<typeof presentEvent>>,
  true as Fits<typeof Suppression, Answer<typeof presentSuppression>>,
  true as Fits<typeof ApiKey, Omit<Answer<typeof presentKey>, 'key'>>,
  true as Fits<typeof CreditBalance, Awaited<Answer<typeof balance>>>,
  true as Fits<typeof Domain, Answer<typeof presentDomain>>,
  true as Fits<typeof WebhookEndpoint, Omit<Answer<typeof presentEndpoint>, 'secret'>>,
  true as Fits<typeof WebhookDelivery, Answer<typeof presentOutboxRow>>,
  true as Fits<typeof Stats, StatsAnswer>,
];

describe('answer schemas and presenters', () => {
  it('agree in type (checked by tsc)', () => expect(checks.every(Boolean)).to.equal(true));
});
