// Runs parseReport on synthetic notices (test/fixtures/synthetic) written from the markers, formats and
// phrase tables of Sisimai's Lhost modules, for MTA families with no real sample in the dev sets.
import { describeReportFixtures } from '../helpers/report-fixtures.js';

describeReportFixtures('parseReport on synthetic notices from Sisimai module formats', 'synthetic');
