"""The nodes of the turn graph: plan, characters (fanned out), write, critique, approve, commit.

Every node returns only what it changes. The nodes of one run share one author view of the
store (built once per turn, :mod:`.turn`), and the commit reuses the delta the critic read
when the text is unchanged; the commit function itself refuses it if the story moved on
meanwhile. ``approve`` calls :func:`langgraph.types.interrupt`; everything before that call
is a pure read, so a resumed node that starts over does no harm.

The nodes live by what they do: :mod:`.drafting` (plan, the characters, write),
:mod:`.review` (critique, and reread for an approver's edit) and :mod:`.approval`
(approve, commit, abandon); each module has the routes that leave its nodes.
"""
