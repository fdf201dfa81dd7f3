-- The run group a sharded run belongs to (run --group) and its shard
-- ("K/N"), so that gate and merge find the shards of one run together.
ALTER TABLE runs ADD COLUMN run_group TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN shard TEXT NOT NULL DEFAULT '';
CREATE INDEX runs_by_group ON runs (run_group, ended);
-- Candidates looks up the newest run per (gate, path) of a policy.
CREATE INDEX results_by_gate ON results (gate, path, run_id);
