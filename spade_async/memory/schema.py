"""The run database's schema as named, ordered migrations (simonw/llm style).

Why named migrations rather than ``CREATE TABLE IF NOT EXISTS``: a run database outlives the
code that wrote it (resume after an upgrade, the TUI reading an old run). Each migration
runs once, in order, inside a transaction, and its name is recorded in ``_migrations``;
adding a column later is a new entry at the end of ``MIGRATIONS``, never an edit.

Environments are content-addressed: ``environments.id`` is the sha256 of the code, so the
same code designed twice is one row.
"""

from __future__ import annotations

MIGRATIONS: list[tuple[str, str]] = [
    (
        "0001_initial",
        """
        CREATE TABLE runs (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            config_toml TEXT NOT NULL,
            config_hash TEXT NOT NULL,
            created_at REAL NOT NULL,
            status TEXT NOT NULL DEFAULT 'running',   -- running | finished | failed | interrupted
            isolation TEXT                            -- JSON: probed sandbox layers
        );
        CREATE TABLE environments (
            id TEXT PRIMARY KEY,                      -- sha256 hex of code
            run_id INTEGER REFERENCES runs(id),
            created_step INTEGER NOT NULL,
            skill TEXT,
            domain TEXT NOT NULL,
            origin TEXT NOT NULL,                     -- seed | fresh | mutation | repair
            parent_id TEXT,
            code TEXT NOT NULL,
            hint TEXT,
            doc_title TEXT,
            doc_text TEXT,
            valid INTEGER NOT NULL,
            reasons TEXT NOT NULL DEFAULT '[]',       -- JSON list of validation reasons
            status TEXT NOT NULL,                     -- active | retired | invalid
            win_rate REAL,
            hint_win_rate REAL,
            regret REAL,
            designer_reward REAL,
            n_plays INTEGER NOT NULL DEFAULT 0,
            updated_step INTEGER,
            embedding BLOB                            -- float32 little-endian
        );
        CREATE INDEX environments_step ON environments(created_step);
        CREATE TABLE episodes (
            id INTEGER PRIMARY KEY,
            run_id INTEGER REFERENCES runs(id),
            step INTEGER NOT NULL,
            env_id TEXT NOT NULL REFERENCES environments(id),
            adapter_version INTEGER NOT NULL,
            hinted INTEGER NOT NULL,
            outcome REAL NOT NULL,
            turns INTEGER NOT NULL,
            truncated INTEGER NOT NULL DEFAULT 0,
            transcript TEXT NOT NULL DEFAULT '[]'     -- JSON list of {role, text, reward}
        );
        CREATE INDEX episodes_env ON episodes(env_id, step);
        CREATE INDEX episodes_step ON episodes(step);
        CREATE TABLE steps (
            run_id INTEGER REFERENCES runs(id),
            step INTEGER NOT NULL,
            adapter_version INTEGER NOT NULL,
            wall_s REAL,
            metrics TEXT NOT NULL,                    -- JSON object, keys in METRIC_KEYS
            created_at REAL NOT NULL,
            PRIMARY KEY (run_id, step)
        );
        CREATE TABLE events (
            id INTEGER PRIMARY KEY,
            run_id INTEGER REFERENCES runs(id),
            step INTEGER,
            kind TEXT NOT NULL,                       -- rejected | stale_drop | checkpoint | resume | info | error
            message TEXT NOT NULL,
            created_at REAL NOT NULL
        );
        CREATE INDEX events_step ON events(step);
        CREATE TABLE checkpoints (
            run_id INTEGER REFERENCES runs(id),
            step INTEGER NOT NULL,
            path TEXT NOT NULL,
            created_at REAL NOT NULL,
            PRIMARY KEY (run_id, step)
        );
        """,
    ),
    (
        "0002_environments_updated_step",
        # The TUI polls "environments touched since step N"; without this it scans the code pages.
        "CREATE INDEX environments_updated ON environments(updated_step);",
    ),
    (
        "0003_evals",
        # Held-out evaluation results (spade_async.eval): one row per model x suite x task x metric
        # of one `spade-async eval` invocation (or one in-loop evaluation), grouped by eval_id.
        """
        CREATE TABLE evals (
            id INTEGER PRIMARY KEY,
            run_id INTEGER REFERENCES runs(id),
            eval_id TEXT NOT NULL,                    -- one evaluation (all its rows share it)
            created_at REAL NOT NULL,
            step INTEGER,                             -- training step of the adapter (NULL: base / outside a run)
            model TEXT NOT NULL,                      -- 'base' or the adapter's label
            adapter TEXT,                             -- adapter folder (NULL for the base model)
            suite TEXT NOT NULL,
            task TEXT NOT NULL,                       -- '*' = the whole suite
            metric TEXT NOT NULL,
            n INTEGER NOT NULL,                       -- paired items
            mean REAL,
            base_mean REAL,                           -- NULL on base rows
            delta REAL,                               -- mean - base_mean over the paired items
            ci_low REAL,                              -- 95% paired bootstrap interval of delta
            ci_high REAL,
            n_errors INTEGER NOT NULL DEFAULT 0,      -- items not scored (sandbox failure), left out
            seconds REAL                              -- wall time this model took on the whole eval
        );
        CREATE INDEX evals_eval ON evals(eval_id);
        CREATE INDEX evals_step ON evals(step);
        """,
    ),
    (
        # (environments.embedding from 0001 is unused: nothing writes or reads it; the Vendi
        # diversity is computed from the live environments' code at each regeneration.)
        # Who runs it: a watcher (the TUI) tells a live run from one whose process was killed
        # (kill -9 leaves status = 'running' forever): same host and pid gone, or no heartbeat.
        "0004_credit_run_owner",
        """
        ALTER TABLE runs ADD COLUMN owner_pid INTEGER;
        ALTER TABLE runs ADD COLUMN owner_host TEXT;
        ALTER TABLE runs ADD COLUMN heartbeat_at REAL;
        """,
    ),
    (
        # Steering a live run (spade_async.selfplay.steering): a request is a row, written by
        # the CLI or a TUI; only the run settles it, between steps, in id order, once. A resume
        # puts rows settled after its checkpoint back to 'queued' (truncate_after).
        "0005_steer_actions",
        """
        CREATE TABLE steer_actions (
            id INTEGER PRIMARY KEY,
            run_id INTEGER REFERENCES runs(id),
            created_at REAL NOT NULL,
            who TEXT NOT NULL,                        -- who asked: 'cli user@host', 'tui (watcher) user@host'
            kind TEXT NOT NULL,                       -- retire | pin | unpin | inject | band | designer_share
            args TEXT NOT NULL DEFAULT '{}',          -- JSON object (env_id, reason, code, low, high, share ...)
            status TEXT NOT NULL DEFAULT 'queued',    -- queued | applied | rejected
            step INTEGER,                             -- the step it took effect (or was refused) at
            settled_at REAL,
            message TEXT                              -- what it changed, or why it was refused
        );
        CREATE INDEX steer_actions_status ON steer_actions(status, id);
        """,
    ),
    (
        # Archive re-evaluation (spade_async.eval.archive): every eval.archive_every steps the
        # live adapter replays a fixed sample of retired environments; one row per environment
        # per round. A resume deletes the rounds after its checkpoint (truncate_after).
        "archive_evals",
        """
        CREATE TABLE archive_evals (
            id INTEGER PRIMARY KEY,
            run_id INTEGER REFERENCES runs(id),
            created_at REAL NOT NULL,
            step INTEGER NOT NULL,                    -- training step after which the round was requested (0-based)
            env_id TEXT NOT NULL,
            skill TEXT,
            adapter TEXT NOT NULL,                    -- versions the round used: 'v5', or 'v5-v6' across a swap
            retired_step INTEGER NOT NULL,            -- the step whose regeneration retired it (0-based)
            return_then REAL NOT NULL,                -- mean plain return over its life, at retirement
            return_now REAL,                          -- mean return of this round's plays (NULL: all errored)
            n INTEGER NOT NULL,                       -- plays that finished
            n_errors INTEGER NOT NULL DEFAULT 0,
            solved_then INTEGER NOT NULL,             -- return_then >= eval.archive_solved
            solved_now INTEGER NOT NULL,              -- return_now >= eval.archive_solved
            seconds REAL                              -- wall time of the whole round
        );
        CREATE INDEX archive_evals_step ON archive_evals(step);
        """,
    ),
]

METRIC_KEYS: tuple[str, ...] = (
    "adapter_version",  # live adapter version at the end of the step
    "valid_fraction",  # admitted / designed candidates this step (NaN if none designed)
    "n_envs",  # live environments this step
    "plain_return_mean",  # mean outcome of plain (hint-free) plays
    "hint_return_mean",  # mean outcome of hinted plays
    "regret_mean",  # mean clipped, scaled hint regret over envs
    "agent_return_mean",  # = plain_return_mean (what the agent is trained on)
    "learnable_fraction",  # share of envs with plain win rate in [0.2, 0.8]
    "band_too_easy",  # envs with win rate > plateau_high + ramp ... see metrics.win_rate_band
    "band_in_band",
    "band_too_hard",
    "band_invalid",
    "designer_reward_mean",
    "env_diversity",  # Vendi score of the live environments' code embeddings (at regeneration)
    "loss",
    "clip_fraction",
    "kl",
    "grad_norm",
    "tokens_per_s",  # generation tokens/s this step
    "stale_dropped",  # samples dropped for staleness (cumulative)
    "time_design_s",
    "time_play_s",
    "time_learn_s",
)
"""Keys of ``steps.metrics`` (a JSON object); the TUI plots these. Absent keys mean 'not measured'."""

CLUSTER_METRIC_KEYS: tuple[str, ...] = (
    "cluster_pools_live",  # remote sandbox pools serving at the end of the step
    "cluster_pools",  # remote sandbox pools configured
    "cluster_replicas_live",  # remote engine replicas serving (only with a remote engine)
    "cluster_replicas",  # remote engine replicas configured
)
"""Keys of ``steps.metrics`` written only by runs with ``[cluster]`` on (spade_async.cluster.status);
the TUI shows them in its header when present."""

PROBE_METRIC_KEYS: tuple[str, ...] = (
    "probe_ok",  # 1.0 when the adapter probe after this step's load passed, else 0.0
    "probe_gap_mean",  # mean |engine - learner| logprob on the probe's tokens (nats)
    "probe_gap_max",
)
"""Keys of ``steps.metrics`` written only on steps that loaded a new adapter in a run that built
its own learner (the adapter probe, spade_async.adapter_check); the TUI header shows a failure."""
