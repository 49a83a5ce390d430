-- When a recovery's new primary became writable (UTC Unix nanoseconds, NULL
-- for none): with detected_at, the time from the first failed check to
-- writes open, which recoveries reports beside the plan-to-done time.
ALTER TABLE recoveries ADD COLUMN writes_open INTEGER;
