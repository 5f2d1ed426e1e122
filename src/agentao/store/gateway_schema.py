"""The gateway's tables on SQLite, as migrations: each entry runs once, in order, and a
released entry never changes (a store of before is brought up to date by the ones it
lacks). The records they hold and what they mean: `store/gateway.py`; PostgreSQL's
own DDL: `store/postgres.py`."""

from __future__ import annotations

from agentao.store.sqlite import Schema

GATEWAY_SCHEMA = Schema(
    "gateway",
    (
        """CREATE TABLE gw_conversations (
            id TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            agent TEXT NOT NULL,
            session_id TEXT,
            title TEXT,
            source TEXT NOT NULL,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            turn_count INTEGER NOT NULL DEFAULT 0,
            transcript_hash TEXT
        )""",
        "CREATE INDEX gw_conversations_by_hash ON gw_conversations(owner, agent, transcript_hash)",
        "CREATE INDEX gw_conversations_by_update ON gw_conversations(owner, updated_at DESC)",
        """CREATE TABLE gw_responses (
            id TEXT PRIMARY KEY,
            conversation_id TEXT NOT NULL REFERENCES gw_conversations(id) ON DELETE CASCADE,
            turn INTEGER NOT NULL,
            status TEXT NOT NULL,
            created_at REAL NOT NULL,
            body TEXT NOT NULL
        )""",
        """CREATE TABLE gw_tasks (
            id TEXT PRIMARY KEY,
            conversation_id TEXT NOT NULL REFERENCES gw_conversations(id) ON DELETE CASCADE,
            status TEXT NOT NULL,
            created_at REAL NOT NULL,
            ended_at REAL,
            prompt TEXT NOT NULL DEFAULT ''
        )""",
        "CREATE INDEX gw_tasks_by_conversation ON gw_tasks(conversation_id, created_at)",
        """CREATE TABLE gw_task_events (
            task_id TEXT NOT NULL REFERENCES gw_tasks(id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            type TEXT NOT NULL,
            at REAL NOT NULL,
            payload TEXT NOT NULL,
            PRIMARY KEY (task_id, seq)
        )""",
        # Owners of rows in flight (see `Boot`); rows from before have no owner (NULL).
        """CREATE TABLE gw_boots (
            id TEXT PRIMARY KEY,
            host TEXT NOT NULL,
            machine_boot TEXT NOT NULL,
            pid_ns TEXT NOT NULL,
            pid INTEGER NOT NULL,
            pid_start TEXT NOT NULL,
            started_at REAL NOT NULL
        )""",
        "ALTER TABLE gw_responses ADD COLUMN boot_id TEXT",
        "ALTER TABLE gw_tasks ADD COLUMN boot_id TEXT",
        "ALTER TABLE gw_tasks ADD COLUMN error TEXT",
        "CREATE INDEX gw_responses_in_flight ON gw_responses(boot_id) WHERE status = 'in_progress'",
        "CREATE INDEX gw_tasks_in_flight ON gw_tasks(boot_id) WHERE status = 'running'",
        # Frames a batch to a row, each frame [task_id, seq, type, at, payload] (TaskEvent).
        """CREATE TABLE gw_task_frames (
            task_id TEXT NOT NULL REFERENCES gw_tasks(id) ON DELETE CASCADE,
            first_seq INTEGER NOT NULL,
            last_seq INTEGER NOT NULL,
            frames BLOB NOT NULL,
            PRIMARY KEY (task_id, first_seq)
        )""",
        """INSERT INTO gw_task_frames (task_id, first_seq, last_seq, frames)
        SELECT task_id, seq, seq, '[[' || json_quote(task_id) || ',' || seq || ','
            || json_quote(type) || ',' || printf('%!.17g', at) || ',' || payload || ']]'
        FROM gw_task_events""",
        "DROP TABLE gw_task_events",
        # Where a remote ACP client opened its session ({cwd, additionalDirectories,
        # mcpServers}; NULL: the agent's configured cwd), and finding one by its session id.
        "ALTER TABLE gw_conversations ADD COLUMN session_params TEXT",
        "CREATE INDEX gw_conversations_by_session ON gw_conversations(agent, session_id)",
        # One log per conversation: the frames of all its tasks, numbered per conversation.
        # The frames of before (numbered per task) are renumbered in the order their
        # tasks were created, one row per frame.
        """CREATE TABLE gw_log_frames (
            conversation_id TEXT NOT NULL REFERENCES gw_conversations(id) ON DELETE CASCADE,
            first_seq INTEGER NOT NULL,
            last_seq INTEGER NOT NULL,
            task_id TEXT NOT NULL REFERENCES gw_tasks(id) ON DELETE CASCADE,
            frames BLOB NOT NULL,
            PRIMARY KEY (conversation_id, first_seq)
        )""",
        """INSERT INTO gw_log_frames (conversation_id, first_seq, last_seq, task_id, frames)
        SELECT conversation_id, n, n, task_id, '[[' || json_quote(task_id) || ',' || n || ','
            || json_quote(type) || ',' || printf('%!.17g', at) || ',' || payload || ']]'
        FROM (
            SELECT t.conversation_id, f.task_id,
                json_extract(j.value, '$[2]') AS type, json_extract(j.value, '$[3]') AS at,
                json_extract(j.value, '$[4]') AS payload,
                ROW_NUMBER() OVER (PARTITION BY t.conversation_id
                    ORDER BY t.created_at, t.rowid, json_extract(j.value, '$[1]')) AS n
            FROM gw_task_frames f JOIN gw_tasks t ON t.id = f.task_id,
                json_each(CAST(f.frames AS TEXT)) j
        )""",
        "DROP TABLE gw_task_frames",
        "CREATE INDEX gw_log_frames_by_task ON gw_log_frames(task_id, first_seq)",
        # Frames of no task (what the agent sent while no turn ran: `LogNote`), task_id
        # NULL. SQLite cannot drop a NOT NULL: the table is rebuilt, its rows kept.
        """CREATE TABLE gw_log_frames_next (
            conversation_id TEXT NOT NULL REFERENCES gw_conversations(id) ON DELETE CASCADE,
            first_seq INTEGER NOT NULL,
            last_seq INTEGER NOT NULL,
            task_id TEXT REFERENCES gw_tasks(id) ON DELETE CASCADE,
            frames BLOB NOT NULL,
            PRIMARY KEY (conversation_id, first_seq)
        )""",
        """INSERT INTO gw_log_frames_next (conversation_id, first_seq, last_seq, task_id, frames)
        SELECT conversation_id, first_seq, last_seq, task_id, frames FROM gw_log_frames""",
        "DROP TABLE gw_log_frames",
        "ALTER TABLE gw_log_frames_next RENAME TO gw_log_frames",
        "CREATE INDEX gw_log_frames_by_task ON gw_log_frames(task_id, first_seq)",
    ),
)
# Who titled a conversation ("prompt", "agent" or "person"; NULL: a row from before, titled
# by its prompt). A schema of its own, so it migrates independently of the tables above.
GATEWAY_TITLES_SCHEMA = Schema(
    "gateway-titles", ("ALTER TABLE gw_conversations ADD COLUMN title_by TEXT",)
)


__all__ = ["GATEWAY_SCHEMA", "GATEWAY_TITLES_SCHEMA"]
