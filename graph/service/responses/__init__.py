"""The shapes the service answers with: one set of models for the CLI's ``--json`` and the API.

Every read or decision the command line prints with ``--json`` and the web studio serves
under ``/api/`` is one of these models, so the two cannot drift apart; FastAPI publishes
them in the OpenAPI schema. Records of memory (developments, hypotheses, findings, plans)
appear as they are; states and beliefs drop their source span (one lookup away through
:class:`~fabula.graph.service.responses.reading.EvidenceOut`).

The models live by what they answer about: :mod:`.stories` (stories, worlds, a branch's
text, its export, the lived story, the usage), :mod:`.turns` (runs, pending turns, drafts,
decisions, rewinds, retcons), :mod:`.reading` (the world, beliefs, branches, minds,
evidence, the plot, the lore, a character's card) and :mod:`.recall` (recall and chat).
Each is imported from its module: this package re-exports nothing.
"""
