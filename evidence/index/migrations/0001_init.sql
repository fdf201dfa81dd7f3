-- Runs whose bundles verified when recorded. Times are Unix nanoseconds (UTC)
-- so that ordering and age checks are integer comparisons.
CREATE TABLE runs (
	id              TEXT PRIMARY KEY,
	dir             TEXT NOT NULL,
	started         INTEGER NOT NULL,
	ended           INTEGER NOT NULL,
	target          TEXT NOT NULL,
	profile         TEXT NOT NULL,
	policy_digest   TEXT NOT NULL,
	image_digest    TEXT NOT NULL DEFAULT '',
	harness         TEXT NOT NULL,
	verdict         TEXT NOT NULL, -- test-result summary: PASSED, WARNED, FAILED
	passed          INTEGER NOT NULL,
	failed          INTEGER NOT NULL,
	other           INTEGER NOT NULL, -- inconclusive or skipped
	verified_at     INTEGER NOT NULL,
	key_fingerprint TEXT NOT NULL
);
CREATE INDEX runs_by_config ON runs (policy_digest, image_digest, ended);
CREATE INDEX runs_by_end ON runs (ended);

CREATE TABLE results (
	run_id   TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	gate     TEXT NOT NULL,
	scenario TEXT NOT NULL,
	path     TEXT NOT NULL,
	verdict  TEXT NOT NULL,
	control  INTEGER NOT NULL
);
CREATE INDEX results_by_run ON results (run_id);
