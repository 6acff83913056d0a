"""The prose reader's parts (:mod:`fabula.agents.reading.prose` is the reader itself).

- :mod:`.words`: the word lists and patterns the reader reads by (the rules, as data);
- :mod:`.lexicon`: the story's entities as the words a text names them with;
- :mod:`.state`: the records: a token, a mention, a verb, the reader's state across sentences;
- :mod:`.marks`: the perception marks a sentence sets on its events, and how they apply.
"""
