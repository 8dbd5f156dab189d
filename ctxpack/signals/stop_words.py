"""Stop words: the function words that match everything and so rank, or locate, nothing.

One list for the whole library, English and French (:data:`STOP_WORDS`). A part of ctxpack with a
vocabulary of its own extends it rather than keeping a list of its own: code search adds the
keywords of programming languages, the extractive digest the words of its own instructions. The
one short list kept beside it, :data:`GOAL_STOP_WORDS`, is the tool-output filters'.
"""

from __future__ import annotations

__all__: list[str] = []

FRENCH_DEMONSTRATIVES = ("ça", "cela", "ceci", "celui", "celle", "ceux", "celles")
"""French demonstrative pronouns: function words, and words that point back to what was said."""

_ENGLISH = (
    "a about above after again against all am an and any are as at be because been before "
    "being below between both but by can could did do does doing down during each few for "
    "from further had has have having he her here hers herself him himself his how i if in "
    "into is it its itself just me more most my myself no nor not now of off on once only or "
    "other our ours ourselves out over own same she should so some such than that the their "
    "theirs them themselves then there these they this those through to too under until up "
    "very was we were what when where which while who whom why will with would you your yours "
    "yourself yourselves yeah yes oh hey hi wow really also got get gonna lot lots thing "
    "things much many one ever even still well i'm it's that's you're i've i'll don't didn't "
    "can't what's "
)
_FRENCH = (
    "le la les un une des du de et ou mais donc ni car ce cet cette ces là il elle ils elles "
    "je tu nous vous que qui quoi dont où au aux en dans par pour sur avec sans sous est sont "
    "été être avoir ai ont pas ne plus se sa son ses leur leurs mon ma mes ton ta tes y te "
    "moi toi lui eux chez entre vers avons avez était étaient sera notre nos votre vos aussi "
    "très tout tous toute toutes déjà ici si comme quand alors même peu quel quelle quels "
    "quelles lequel laquelle lesquels lesquelles depuis pendant avant après contre selon "
    "malgré "
)

STOP_WORDS = frozenset([*_ENGLISH.split(), *_FRENCH.split(), *FRENCH_DEMONSTRATIVES])
"""English and French function words, lower-cased, with their apostrophe forms (``"it's"``).

Example:
    >>> "the" in STOP_WORDS and "avec" in STOP_WORDS, "refresh" in STOP_WORDS
    (True, False)
"""

_GOAL = (
    "the and for that this with from are was were will not but have has had you your our can all "
    "any its into then than there their them they what when which while who why how out use used "
    "using let lets now need see seems look check file files line lines code run test tests "
    "thought should would could also just like first next"
)
GOAL_STOP_WORDS = frozenset(_GOAL.split())
"""The words of an agent's goal that locate no line of a tool output: common English words of 3+
letters, and the words agents use about their own work ("check", "file", "test"). Deliberately
shorter than :data:`STOP_WORDS`: with the whole list, goal words such as "after" or "more" would
no longer keep a line, and what the filters keep would change."""
