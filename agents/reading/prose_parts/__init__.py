"""The prose reader's parts (:mod:`fabula.agents.reading.prose` is the reader itself).

The reader of ordinary English is one sentence reader, :class:`.sentence._Sentence`, made of
parts that each read one concern of a sentence and share its state (:mod:`.base`):

- :mod:`.words`: the word lists and patterns the parts read by (the rules, as data);
- :mod:`.lexicon`: the story's entities as the words a text names them with;
- :mod:`.state`: the records: a token, a mention, a verb, the reader's state across sentences;
- :mod:`.marks`: the perception marks a sentence sets on its events, and how they apply;
- :mod:`.mentions`, :mod:`.pronouns`: who and what a sentence names, and whom a pronoun means;
- :mod:`.verbs`: a sentence's verbs and who does each;
- :mod:`.objects`: comings and goings, and acts on objects (taking, putting, giving);
- :mod:`.perception`: seeing and not seeing, and what is kept from whom;
- :mod:`.statements`: where things are, as stated;
- :mod:`.telling`: telling where a thing is (a feeling is the phases');
- :mod:`.settle`: a sentence's marks applied, and the state kept for the next;
- :mod:`.sentence`: the parts composed, and a sentence read in order.
"""
