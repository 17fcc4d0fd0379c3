// Runs parseReport on the wider development set (test/fixtures/sisimai-extra, more samples from
// Sisimai's set-of-emails, BSD-2-Clause) and checks it against that folder's expected.json.
import { describeReportFixtures } from '../helpers/report-fixtures.js';

describeReportFixtures('parseReport on the extra Sisimai samples', 'sisimai-extra');
