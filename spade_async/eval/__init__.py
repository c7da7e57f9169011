"""Held-out evaluation: does an adapter beat its base model on things it never trained on?

Why a package of its own: a training curve only says the policy got better at the games it
was trained on, with the seeds it was trained on. This package plays the built-in games on
seeds that training never draws, answers reasoning-gym problems, or plays any folder of
environment files, once with the base model and once per adapter, on the *same* items, and
reports each adapter's paired difference with a 95% interval.

Layout: ``stats`` (the paired interval, pure), ``suites`` (the plugin protocol and registry),
``games`` / ``reasoning`` (the built-in suites), ``lm_eval_suite`` (lm-evaluation-harness tasks), ``runner`` (load each model, score every
item, pair them up), ``table`` (printing and JSON), ``inloop`` (the live policy every
``eval.every`` steps during training, beside the rollouts).
"""
