"""What several roles share about characters, outside any one role's package: goals and
the steps toward them (:mod:`.goals`), a character's brief (:mod:`.brief`) and the
reading and saying of lines (:mod:`.replies`). The planner plans with goals, the
character pursues them, the writer and the critic read who a line is said to: each
imports this package, never another role's (the independence contract in
``pyproject.toml``).
"""
