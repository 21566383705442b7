"""The learner's side: the child process that holds a learner's code (:mod:`.child`, started by
:mod:`.parent`), the data that crosses between them (:mod:`.codec`), bubblewrap's confinement
(:mod:`.confinement`) and the supervision of every process (:mod:`.supervise`).

Imports nothing: the sandboxed child imports this package, and sees only this file, ``child.py``
and ``codec.py`` of it (:data:`grader.sandbox.child.ALLOWED_GRADER_MODULES`). It knows nothing of
notebooks, suites, reports, classes or hosts.
"""
