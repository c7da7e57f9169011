"""What runs inside the untrusted process: the zygote (fork server), the worker that executes
environment code, and the hardening (rlimits, uid drop, Landlock, seccomp).

These modules import only the standard library, msgspec, pyseccomp and the few package
modules the child needs (the wire protocol, tree removal, the environment contract's
allowed imports); an import contract in tests keeps it so."""
