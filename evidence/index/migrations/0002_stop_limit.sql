-- The stop limit a stop-signal result was judged against (ms; 0 when not
-- recorded), so that a release can bound it (gate --max-stop).
ALTER TABLE results ADD COLUMN stop_limit_ms REAL NOT NULL DEFAULT 0;
