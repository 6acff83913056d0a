"""Access tracking: who is where, who witnessed what, who was told what, and what every mind
(and every mind's model of other minds) comes to believe.

The tracker is independent of how a turn's text was read: it takes typed
:class:`~fabula.memory.actions.StoryAction` values (from the controlled-English rules, or
from a model), the prior view read from the store (:class:`PriorView`: W, the relevant part
of B, the entities), and the world's :class:`~fabula.memory.rules.WorldRules`, and writes
entities, events with their witnesses, world states and belief records into a
:class:`~fabula.memory.delta.DeltaBuilder`. Story time inside a turn is the event order.

- :mod:`.prior` — what the tracker starts from, and which slots a turn can touch;
- :mod:`.state` — the tracker's state and its primitive changes (a belief, a state);
- :mod:`.handlers` — one handler per action kind, and :func:`track`;
- :mod:`.nested` — nested chains, kept by group (one record for what a group of witnesses
  came to hold together) and read on demand from the first holder's own keyspace.
"""

from fabula.memory.tracking.handlers import HANDLERS as HANDLERS
from fabula.memory.tracking.handlers import track as track
from fabula.memory.tracking.prior import Chain as Chain
from fabula.memory.tracking.prior import Knowledge as Knowledge
from fabula.memory.tracking.prior import PriorView as PriorView
from fabula.memory.tracking.prior import chains_over as chains_over
from fabula.memory.tracking.prior import initial_scene as initial_scene
from fabula.memory.tracking.prior import touched_slots as touched_slots
