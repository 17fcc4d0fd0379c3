-- The email list's indexes (issue 38): every combination of filters a key can send to GET /v1/emails is a range of
-- one index read in seq order, so a page costs its own rows whatever the team holds (a filter on a status no row has
-- reads nothing). A key always lists one mode (a test key: test; a live key: the test_mode it asks for) or, a live
-- key without test_mode, both; store/emails.ts reads "both" as one range per mode merged by seq (two pages of at most
-- `limit + 1` rows), so the indexes need not exist once with and once without test_mode.
--   emails_team_mode (team_id, test_mode, seq), kept: one mode, no status; both modes, no status (one range each).
--   emails_team_mode_status (team_id, test_mode, status, seq), new: one mode and a status. Before it, a test key's
--     `status=bounced` took emails_team_mode and read every email of its mode to find none (326 ms at 10^6 emails).
--   emails_team_status (team_id, status, seq), kept: both modes and a status (one range; also the queue's oldest
--     waiting email of a team, store/queue-counts.ts).
--   emails_team (team_id, seq), dropped: the list without filters reads emails_team_mode once per mode instead. So
--     an accepted email still writes three team indexes.
CREATE INDEX emails_team_mode_status ON emails (team_id, test_mode, status, seq);
DROP INDEX emails_team;
