"""What leaves the repository: the learners' starter repository (:mod:`.starter`) and the hosted
graders (:mod:`.hosted`: Gradescope, GitHub Classroom, class workflows for Actions, Slurm and
Kubernetes). Stands on :func:`grader.grade` and the class's files of :mod:`grader.batch`;
nothing in the grader imports it but the command line.
"""
