-- The hosts an approval card of category network allowed in a thread
-- (issue 35): the thread's commands may reach host for the rest of its
-- life, across restarts and replicas. host is as the proxy compares it:
-- lower case, with its port (`example.com:443`).
CREATE TABLE egress_hosts (
	thread_key  TEXT    NOT NULL,
	host        TEXT    NOT NULL,
	approval_id TEXT    NOT NULL,
	at          INTEGER NOT NULL,
	PRIMARY KEY (thread_key, host)
);
