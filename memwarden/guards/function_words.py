"""Function words of the five languages the guards read (en, de, fr, es, it), folded as
:func:`~memwarden.guards.folding.fold` folds them: the words that carry no content of their
own (articles, prepositions, pronouns, auxiliaries, conjunctions) and the negations.

Shared by the contradiction check (which compares content words only) and the procedure
values (where a number followed by one of these is no quantity: "facture 4 de Müller",
"Zimmer 12 ist frei", "sala 4 e"). One list, so that both read a text the same way."""

from __future__ import annotations

__all__ = ["MOMENTS", "NEGATIONS", "NOT_CONTENT", "ORDINAL_SUFFIXES", "STOP_WORDS"]

#: Negation words (folded, five languages).
NEGATIONS = frozenset("""
not no never none nobody nothing neither nor cannot cant dont doesnt didnt isnt arent wasnt werent wont
shouldnt mustnt hasnt havent
nicht kein keine keinen keinem keiner keines nie niemals
pas jamais aucun aucune aucuns aucunes
nunca jamas ningun ninguna ninguno
non mai nessun nessuno nessuna
""".split())

#: Words carrying no content for the "same statement" test (all five languages, folded).
STOP_WORDS = frozenset("""
a an the and or but of to in on at by for with from as is are was were be been being am do does did has have
had it its this that these those there here he she his her him they them their we us our you your i my me so
than then too very just also still only any all each every some per via into about after before over under
again now today currently anymore longer more any
der die das den dem des ein eine einen einem einer eines und oder aber von zu im in am an auf mit fur bei als
ist sind war waren sein hat haben habe wird werden um es er sie wir ihr ich mich sich noch nur auch schon mehr jetzt
heute
le la les l un une des du de d et ou mais a au aux en dans sur avec pour par est sont etait ete il elle ils
elles nous vous je me se ne n plus encore aussi deja ce cette ces qui que
el los las lo uno unos unas y o pero de del en con para por es son era esta estan fue su sus se me ya mas
todavia tambien que
il lo gli i una uno e o ma di da del della dei degli delle al allo alla in con per su tra fra sono era stato
sua suo suoi sue si mi ci piu ancora anche gia che alle ai agli ha ho hanno
""".split())

#: Neither content nor a negation.
NOT_CONTENT = STOP_WORDS | NEGATIONS

#: What follows a number written as an ordinal ("12th", "1er", "3eme", "2te"): a position, no unit.
ORDINAL_SUFFIXES = frozenset("st nd rd th er re eme ieme te ten ter tes".split())

#: Moments and the time prepositions before them (English): "by Friday" is a deadline, "since
#: March 2025" a date, neither an approver nor a label.
MOMENTS = frozenset("""monday tuesday wednesday thursday friday saturday sunday mondays tuesdays wednesdays thursdays
fridays saturdays sundays today tomorrow tonight yesterday noon midday midnight morning afternoon evening night weekend
end eod eow cob next this last january february march april may june july august september october november december
by before until till on at in within during every each since""".split())
