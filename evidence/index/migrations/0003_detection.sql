-- A result's detection score as JSON ('' when the run did not measure
-- detection), so that a release can require it (gate --require-detection).
ALTER TABLE results ADD COLUMN detection TEXT NOT NULL DEFAULT '';
