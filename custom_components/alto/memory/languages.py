"""The words the memory's rules read, one record per language Alto speaks, and nowhere else.

Recall's rules on words (`lexical`: stems and function words; `informative`: questions,
acknowledgements, commands; `recall`'s step 3: words of change and values) read a text in its
own language. A row does not record the language it was said in, so `detect` reads it from the
text: the language most of whose listed words the text uses, ties to the first in LANGUAGES
(English first, so a text with no listed word, a name or a number, reads as English). Why not a
language on the row, or Home Assistant's: a text's terms stay a function of its text alone, as
the checkpoint's corpus image needs (`corpus.LEXICON` fingerprints every list here; nothing new
is journaled or replayed), rows stored before read alike, and a household that speaks two
languages, or whose voice pipeline speaks another language than Home Assistant's own, needs
nothing configured. Measured: 3,635 of the 3,645 texts of the English recall sets read as English
(the others are "Ta." and a few words of Hindi or Spanish).

`informative` and step 3 read the union of every language's lists (a "Danke!" or "Licht aus" has
too few words to tell its language by), so each list is kept from meaning something else in
another language: no command or question word that opens a statement elsewhere (never "ben",
"lance", "come": English names and verbs; in Spanish and Italian, whose verbs drop their
subject, only imperatives a statement rarely opens with), no courtesy that is a name ("dan"), and
no word of change or value whose stem is a common English word ("due", "plus", "midi", "alle").

English's lists are those Alto had before the other languages came, and whom thanks are said
to ("Ta, love."), which every language's acknowledgements now hold.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


@dataclass(frozen=True, slots=True)
class Language:
    """How the memory reads one language. Every word casefolded, apostrophes as ``'``."""

    code: str  # the primary language subtag Home Assistant uses ("de")
    stemmer: str  # the Snowball algorithm (`snowballstemmer`)
    function_words: frozenset[str]  # never terms (every list tells the language: `detect`)
    questions: frozenset[str]  # openers of a question without its "?" (interrogatives, verbs)
    acknowledgements: frozenset[str]  # a sentence of only these acknowledges
    commands: frozenset[str]  # imperatives of device control and media, never of telling
    courtesies: frozenset[str]  # what may come before a command ("please", "hey")
    changes: frozenset[str]  # words saying a statement changes an earlier one (`recall`)
    values: frozenset[str]  # words carrying a value an update changes: when, how many
    elided: frozenset[str] = frozenset()  # what an apostrophe drops before a word ("l'", "d'")
    clitics: frozenset[str] = frozenset()  # what an apostrophe joins to a word ("'s", "'t")
    compounds: bool = False  # writes compounds closed: a term also meets its head (`lexical`)
    genitive: bool = False  # a name's genitive is the name and a bare "s" ("Leas", "Sannes")
    # Separable verbs' particles: the only words an inner "ge" the stemmer drops may follow
    # ("opgehaald"); after anything else it is a word's own and stays ("garagedeur": `lexical`).
    particles: frozenset[str] = frozenset()
    # What ends a command said without its verb ("Licht aus", "lights off", "woonkamer lamp uit"):
    # empty where such a command is not said so (French, Spanish and Italian name the verb).
    switches: frozenset[str] = frozenset()
    # Finite forms of "to be" and "to have" that make a sentence a statement whatever opens it
    # ("Set of spare keys is under the pot", "Open dag … is op veertien maart": `informative`).
    finite: frozenset[str] = frozenset()
    # What speakers call themselves, each word to what a memory is embedded with in its place
    # (`pipeline.said_by`): "{name}" their name, "{genitive}" its genitive ("my" -> "Ellie's").
    # Empty where no household set measures it (French, Spanish, Italian): their possessives
    # stand before the noun the genitive would follow ("mon anniversaire"), so a word for a
    # word would not read as the language does.
    first_person: Mapping[str, str] = MappingProxyType({})
    # Words of family (`kin`): each word or phrase, as its words are read, to the relation it
    # names ("mum" -> "mother"); `kin_alone` those also said alone for the asker's own ("Mum",
    # "Oma"); `possessives` the asker's own ("my", "our", "m'n").
    kin: Mapping[str, str] = MappingProxyType({})
    kin_alone: frozenset[str] = frozenset()
    possessives: frozenset[str] = frozenset()

    @property
    def kin_words(self) -> int:
        """The most words a word of family is said in ("mother in law": 3)."""
        return max((len(k.split()) for k in self.kin), default=1)


def _kin(**kinds: str) -> Mapping[str, str]:
    """`kin` of a language: for each relation, its words and phrases, comma-separated.

    A hyphen is read as a space ("mother in law", "grand mère"); a relation ending "_f" or "_m"
    names only a woman or a man (`kin.relatives` reads it as "child:f").
    """
    return MappingProxyType(
        {
            " ".join(w.split()): re.sub(r"_([fm])$", r":\1", kind)
            for kind, ws in kinds.items()
            for w in ws.split(",")
        }
    )


def _forms(
    selves: str, possessives: str, contracted: Mapping[str, str] | None = None
) -> Mapping[str, str]:
    """`first_person` of a language: the words for oneself, the possessives, and contractions."""
    forms = dict.fromkeys(selves.split(), "{name}")
    forms |= dict.fromkeys(possessives.split(), "{genitive}")
    return MappingProxyType(forms | dict(contracted or {}))


ENGLISH: Final = Language(
    "en",
    "english",
    function_words=_words(
        "a an the and or but of to in on at by for with from as is are was were be been being am "
        "it its this that these those there here i me my we our us you your he him his she her "
        "they them their do does did so if then than too very just also oh um uh please"
    ),
    questions=_words(
        "what when where who whom whose why how which is are am was were do does did can could "
        "will would shall should may might must have has had"
    ),
    acknowledgements=_words(
        "ok okay k thanks thank you ty cheers great good cool nice perfect awesome fine alright "
        "right sure yes yeah yep yup no nope nah never mind night morning evening bye goodbye "
        "hello hi hey there ha haha hahaha lol wow oh ah hmm um uh got it that's lovely brilliant "
        "super excellent fantastic wonderful sounds much very so all done sorry please goodnight "
        # "that'll do", "forget it"
        "whatever that that'll will do computer alto assistant afternoon lot forget everyone"
        # whom thanks may be said to ("Ta, love.", "Cheers, mate.", "Thank you, dear.")
        " ta love dear darling sweetheart sweetie honey hun mate pet"
    ),
    commands=_words(
        "turn switch set dim brighten open close lock unlock play pause stop start resume skip "
        "mute unmute raise lower increase decrease activate deactivate arm disarm run toggle show "
        "tell read call text message put add cancel"
    ),
    courtesies=_words("please hey ok okay alto assistant now and then"),
    # "the bus comes at 7:30 now", "moved to the golf club", or keeps the rest ("still on
    # Tuesdays", "same place").
    changes=_words(
        "now actually instead anymore longer changed change moved move new rescheduled switched "
        "replaced updated correction wrong same still"
    ),
    values=_words(
        "monday tuesday wednesday thursday friday saturday sunday weekend weekday week month year "
        "january february march april may june july august september october november december "
        "one two three four five six seven eight nine ten eleven twelve fifteen twenty thirty half "
        "quarter noon midnight morning afternoon evening night am pm oclock today tomorrow daily "
        "weekly fortnightly monthly early late earlier later every other"
    ),
    clitics=_words("s m re ve d ll t"),
    switches=_words("on off"),
    first_person=_forms(
        "i me myself",
        "my mine",
        {"i'm": "{name} is", "i've": "{name} has", "i'll": "{name} will", "i'd": "{name} would"},
    ),
    kin=_kin(
        mother="mum, mom, mam, mummy, mommy, mammy, mother, ma, mama",
        father="dad, daddy, father, pa, papa, da",
        parent="parents, folks",
        partner="partner, spouse",
        partner_m="husband, hubby",
        partner_f="wife, missus",
        child="kid, kids, child, children",
        child_m="son, lad, boy",
        child_f="daughter, lass, girl",
        sibling="sibling, siblings",
        sibling_m="brother, bro",
        sibling_f="sister, sis",
        grandmother="nan, nana, nanna, gran, granny, grandma, grandmother, grandmum",
        grandfather="grandad, granddad, grandpa, grandfather, gramps",
        grandparent="grandparents",
        grandchild="grandchild, grandchildren, grandkid, grandkids",
        grandchild_m="grandson",
        grandchild_f="granddaughter",
        mother_in_law="mother in law, mum in law, mom in law",
        father_in_law="father in law, dad in law",
        parent_in_law="in laws, parents in law",
        child_in_law_m="son in law",
        child_in_law_f="daughter in law",
    ),
    kin_alone=_words(
        "mum mom mam mummy mommy mammy ma mama dad daddy pa papa nan nana nanna gran granny "
        "grandma grandad granddad grandpa"
    ),
    possessives=_words("my our"),
    finite=_words("is are was were isn't aren't wasn't weren't has hasn't"),
)

GERMAN: Final = Language(
    "de",
    "german",
    function_words=_words(
        "der die das den dem des ein eine einen einem einer eines und oder aber auch ich du er sie "
        "es wir ihr mich mir dich dir sich uns euch mein meine meinen meinem meiner meines dein "
        "deine deinen deinem deiner sein seine seinen seinem seiner ihre ihren ihrem ihrer unser "
        "unsere unseren unserem unserer euer eure ist sind war waren bin bist seid gewesen hat "
        "habe hab hast haben hatte hatten wird werden wurde wurden zu zum zur im in am an ans auf "
        "aus bei beim mit nach von vom für fürs über unter vor hinter neben zwischen durch um "
        "bis als wie wenn dass ob so da dann doch ja denn weil also man dies diese dieser dieses "
        "diesem diesen dort hier äh ähm mal halt eben"
    ),
    questions=_words(
        "wer wen wem wessen was wann wo wohin woher warum wieso weshalb wie welche welcher "
        "welches welchen welchem ist sind bist war waren hat habe hast haben hatte kann "
        "kannst können könnte könntest muss musst müssen soll sollen sollte darf dürfen wird "
        "werden würde würdest gibt gibt's weißt kommt geht"
    ),
    acknowledgements=_words(
        "ok okay danke dank vielen schön sehr gut super prima toll klasse perfekt alles klar passt "
        "ja nein jo jep jawohl nö gute guten gut nacht morgen abend tag hallo hi hey tschüss "
        "tschüs ciao bis später dann bitte gern gerne geht verstanden genau stimmt cool top dir "
        "ihnen wunderbar herzlichen vielmals ach oh hm so na alto assistent schlaf vergiss es egal"
        " schatz schatzi liebling"
    ),
    commands=_words(
        "mach mache schalte schalt stell stelle dimme dimm öffne öffne schließe schließ sperre "
        "sperr entsperre entsperr spiel spiele pausiere stoppe stopp starte setz setze leg lege "
        "dreh drehe fahr fahre erhöhe verringere senke aktiviere deaktiviere ruf rufe schreib "
        "schreibe schick schicke zeig zeige lies sag sage füge brich überspring überspringe lass "
        "lasse erzähl erzähle"
    ),
    courtesies=_words("bitte hey hallo ok okay alto assistent jetzt und dann mal"),
    changes=_words(
        "jetzt nun mittlerweile inzwischen stattdessen statt anstatt geändert ändert verlegt "
        "verschoben umgezogen gewechselt neu neue neuen eigentlich korrektur falsch gleich "
        "gleiche weiterhin mehr"
    ),
    values=_words(
        "montag dienstag mittwoch donnerstag freitag samstag sonnabend sonntag montags dienstags "
        "mittwochs donnerstags freitags samstags sonntags wochenende werktag woche monat jahr "
        "januar februar märz april mai juni juli august september oktober november dezember eins "
        "zwei drei vier fünf sechs sieben acht neun zehn elf zwölf fünfzehn zwanzig dreißig halb "
        "viertel mittag mitternacht morgen morgens vormittag vormittags nachmittag nachmittags "
        "abend abends nacht nachts uhr heute übermorgen täglich wöchentlich monatlich früh früher "
        "spät später jeden jede"
    ),
    clitics=_words("s"),  # "gibt's"
    compounds=True,
    genitive=True,
    switches=_words("an aus ein zu auf hoch runter lauter leiser heller dunkler"),
    first_person=_forms("ich mich mir", "mein meine meinen meinem meiner meines meins"),
    kin=_kin(
        mother="mama, mutti, mami, mutter",
        father="papa, vati, papi, vater",
        parent="eltern",
        partner="partner, partnerin",
        partner_m="mann, ehemann, gatte",
        partner_f="frau, ehefrau, gattin",
        child="kind, kinder",
        child_m="sohn, sohnemann",
        child_f="tochter",
        sibling="geschwister",
        sibling_m="bruder, brüderchen",
        sibling_f="schwester, schwesterchen",
        grandmother="oma, omi, großmutter",
        grandfather="opa, opi, großvater",
        grandparent="großeltern",
        grandchild="enkel, enkelkind, enkelkinder",
        grandchild_m="enkelsohn",
        grandchild_f="enkelin, enkeltochter",
        mother_in_law="schwiegermutter, schwiegermama",
        father_in_law="schwiegervater, schwiegerpapa",
        parent_in_law="schwiegereltern",
        child_in_law_m="schwiegersohn",
        child_in_law_f="schwiegertochter",
    ),
    kin_alone=_words("mama mutti mami papa vati papi oma omi opa opi"),
    possessives=_words(
        "mein meine meinen meinem meiner meines unser unsere unseren unserem unserer unseres"
    ),
    finite=_words("ist sind war waren hat hatte hatten"),
)

FRENCH: Final = Language(
    "fr",
    "french",
    function_words=_words(
        "le la les un une des du de et ou mais aussi je tu il elle on nous vous ils elles me te se "
        "lui leur leurs mon ma mes ton ta tes son sa ses notre nos votre vos ce cet cette ces qui "
        "que quoi dont est sont suis es sommes êtes était étaient été a ai as avons avez ont "
        "avait être avoir à au aux en dans sur sous avec pour par chez vers entre y ne donc car "
        "si très euh"
    ),
    questions=_words(
        "qui que quoi quand où comment pourquoi quel quelle quels quelles combien est peux pouvez "
        "peut sais savez avez"
    ),
    acknowledgements=_words(
        "ok okay d'accord d'acc merci beaucoup bien très super parfait génial oui non ouais bonne "
        "bon nuit journée soirée bonjour bonsoir salut coucou au revoir à plus tard entendu "
        "compris c'est noté top cool nickel impeccable mille fois ah oh alto laisse tomber rien "
        "pas de souci problème tout le monde"
        " mon chéri chérie chou cœur"
    ),
    commands=_words(
        "allume éteins mets règle baisse monte augmente diminue ouvre ferme verrouille "
        "déverrouille joue arrête démarre reprends passe coupe active désactive affiche "
        "montre dis lis appelle envoie ajoute annule raconte racontez"
    ),
    courtesies=_words("hé ok okay alto et puis maintenant alors stp"),
    changes=_words(
        "maintenant désormais dorénavant plutôt changé change modifié déplacé déménagé nouveau "
        "nouvelle nouveaux toujours même correction faux"
    ),
    values=_words(
        "lundi mardi mercredi jeudi vendredi samedi dimanche semaine mois an année janvier février "
        "mars avril mai juin juillet août septembre octobre novembre décembre deux trois quatre "
        "cinq six sept huit neuf dix onze douze quinze vingt trente demi demie quart minuit "
        "matin soir soirée nuit heure heures aujourd'hui demain quotidien hebdomadaire "
        "mensuel tôt tard chaque tous"
    ),
    elided=_words("l d j m t s n c qu jusqu lorsqu puisqu quoiqu presqu"),
    kin=_kin(
        mother="maman, mère",
        father="papa, père",
        parent="parents",
        partner_m="mari, époux, conjoint, compagnon",
        partner_f="femme, épouse, conjointe, compagne",
        child="enfant, enfants",
        child_m="fils",
        child_f="fille",
        sibling="frères, sœurs",
        sibling_m="frère",
        sibling_f="sœur, soeur",
        grandmother="grand mère, mamie, mémé, mamy",
        grandfather="grand père, papi, papy, pépé",
        grandparent="grands parents",
        grandchild="petits enfants, petit enfant",
        grandchild_m="petit fils",
        grandchild_f="petite fille",
        mother_in_law="belle mère",
        father_in_law="beau père",
        parent_in_law="beaux parents",
        child_in_law_m="gendre, beau fils",
        child_in_law_f="belle fille",
    ),
    kin_alone=_words("maman papa mamie mémé mamy papi papy pépé"),
    possessives=_words("mon ma mes notre nos"),
    finite=_words("est sont était étaient ont avait avaient"),
)

SPANISH: Final = Language(
    "es",
    "spanish",
    function_words=_words(
        "el la los las lo un una unos unas y o pero también yo tú él ella nosotros nosotras "
        "vosotros ellos ellas me te se nos os le les mi mis tu tus su sus nuestro nuestra "
        "nuestros nuestras de del al a en con por para sin sobre entre es son soy eres somos "
        "está están estoy estás estamos ser estar era eran fue ha he has han hemos había que "
        "como cuando donde muy este esta estos estas ese esa eso esto hay"
    ),
    questions=_words(
        "qué quién quiénes cuándo dónde adónde cómo cuál cuáles cuánto cuánta cuántos cuántas "
        "puedes podrías sabes"
    ),
    acknowledgements=_words(
        "vale ok okay gracias muchas muchísimas perfecto genial estupendo bien muy sí si no claro "
        "de acuerdo buenas buenos noches días tardes hola adiós chao hasta luego mañana entendido "
        "listo guay súper super ah oh alto déjalo importa"
        " mi cariño amor cielo"
    ),
    # Only imperatives a statement rarely opens with: Spanish drops the subject, and "abre",
    # "cierra" or "llama" also say what someone or something does ("Abre a las nueve").
    commands=_words(
        "enciende apaga pon sube baja bloquea desbloquea reproduce pausa detén inicia reanuda "
        "salta silencia aumenta disminuye activa desactiva muestra dime añade agrega cancela "
        "atenúa cuéntame"
    ),
    courtesies=_words("por favor oye ok okay vale alto y luego ahora"),
    changes=_words(
        "ahora cambiado cambiada cambió movido trasladado nuevo nueva realidad sigue mismo "
        "misma corrección equivocado"
    ),
    values=_words(
        "lunes martes miércoles jueves viernes sábado domingo semana mes año enero febrero marzo "
        "abril mayo junio julio agosto septiembre octubre noviembre diciembre uno dos tres cuatro "
        "cinco seis siete ocho nueve diez quince veinte treinta media cuarto mediodía "
        "medianoche mañana tarde noche hora horas hoy diario semanal quincenal mensual temprano "
        "pronto cada"
    ),
    kin=_kin(
        mother="madre, mamá, mami",
        father="padre, papá, papi",
        parent="padres",
        partner="pareja",
        partner_m="marido, esposo",
        partner_f="esposa, mujer",
        child="hijos",
        child_m="hijo",
        child_f="hija, hijas",
        sibling="hermanos",
        sibling_m="hermano",
        sibling_f="hermana, hermanas",
        grandmother="abuela, abuelita",
        grandfather="abuelo, abuelito",
        grandparent="abuelos",
        grandchild="nietos",
        grandchild_m="nieto",
        grandchild_f="nieta, nietas",
        mother_in_law="suegra",
        father_in_law="suegro",
        parent_in_law="suegros",
        child_in_law_m="yerno",
        child_in_law_f="nuera",
    ),
    kin_alone=_words("mamá mami papá papi abuela abuelita abuelo abuelito"),
    possessives=_words("mi mis nuestro nuestra nuestros nuestras"),
    finite=_words("es son era eran está están estaba fue fueron"),
)

DUTCH: Final = Language(
    "nl",
    "dutch",
    function_words=_words(
        "de het een en of maar ook ik jij je u hij zij ze wij we jullie mij me jou hem haar ons "
        "hun mijn jouw zijn onze uw is was waren bent heb hebt heeft hebben had hadden wordt "
        "worden werd zal zullen zou zouden te om in op aan bij met naar van voor uit over onder "
        "door tot als dan dat die dit deze er hier daar al nog wel toch even zo s t k eh"
    ),
    questions=_words(
        "wie wat wanneer waar waarom hoe welke welk hoeveel hoelang is was waren heeft heb hebt "
        "hebben had kan kun kunt kunnen kon zou zouden moet moeten mogen wil wilt willen zal "
        "zullen gaat doet weet komt"
    ),
    acknowledgements=_words(
        "oké ok okay dank je jij u wel bedankt dankjewel dankuwel top prima fijn mooi zo goed "
        "helemaal super leuk geweldig perfect ja nee nou hoor hallo hoi hey doei dag tot straks "
        "morgen welterusten goedemorgen goedenavond goedenacht slaap lekker heel erg hartelijk "
        "klopt precies begrepen duidelijk oh ah hm alto laat maar allemaal hè"
        " schat schatje lieverd liefje"
    ),
    commands=_words(
        "zet doe schakel dim open sluit vergrendel ontgrendel speel pauzeer stop start hervat "
        "verhoog verlaag activeer deactiveer toon vertel lees bel stuur voeg annuleer draai maak"
    ),
    courtesies=_words("alsjeblieft alstublieft hé hey hoi oké ok okay alto en nu even"),
    changes=_words(
        "nu inmiddels tegenwoordig voortaan intussen meer veranderd verandert gewijzigd "
        "verplaatst verzet verhuisd nieuw nieuwe eigenlijk correctie fout zelfde dezelfde steeds"
    ),
    values=_words(
        "maandag dinsdag woensdag donderdag vrijdag zaterdag zondag weekend week maand jaar "
        "januari februari maart april mei juni juli augustus september oktober november december "
        "één twee drie vier vijf zes zeven acht negen tien elf twaalf vijftien twintig dertig "
        "half kwart middag middernacht ochtend ochtends middags avond avonds nacht nachts uur "
        "vandaag morgen overmorgen dagelijks wekelijks maandelijks vroeg vroeger laat later "
        "eerder elke iedere"
    ),
    clitics=_words("s t k n"),  # "'s ochtends", "'t", "'k", "'n"
    compounds=True,
    genitive=True,
    particles=_words(
        "aan af bij binnen buiten door in langs los mee na neer om onder op over terug toe uit "
        "vast voor weg"
    ),
    switches=_words("aan uit omhoog omlaag harder zachter"),
    first_person=_forms("ik mij me mezelf", "mijn m'n"),
    kin=_kin(
        mother="mam, mama, ma, mams, moeder",
        father="pap, papa, pa, paps, vader",
        parent="ouders",
        partner="partner",
        partner_m="man, echtgenoot",
        partner_f="vrouw, echtgenote",
        child="kind, kinderen",
        child_m="zoon, zoontje",
        child_f="dochter, dochtertje",
        sibling_m="broer, broertje",
        sibling_f="zus, zusje, zuster",
        grandmother="oma, omi, grootmoeder",
        grandfather="opa, grootvader",
        grandparent="grootouders",
        grandchild="kleinkind, kleinkinderen",
        grandchild_m="kleinzoon",
        grandchild_f="kleindochter",
        mother_in_law="schoonmoeder, schoonmama",
        father_in_law="schoonvader, schoonpapa",
        parent_in_law="schoonouders",
        child_in_law_m="schoonzoon",
        child_in_law_f="schoondochter",
    ),
    kin_alone=_words("mam mama ma mams pap papa pa paps oma omi opa"),
    possessives=_words("mijn m'n ons onze"),
    finite=_words("is zijn was waren heeft hebben had hadden"),
)

ITALIAN: Final = Language(
    "it",
    "italian",
    function_words=_words(
        "il lo la i gli le un uno una e o ma anche io tu lui lei noi voi loro mi ti si ci vi mio "
        "mia miei mie tuo tua suo sua nostro nostra di del della dello dei degli delle a al alla "
        "ai agli alle da dal dalla in nel nella nei con su sul sulla per tra fra è sono siamo "
        "siete era erano sia ha ho hai abbiamo avete hanno che come quando dove molto questo "
        "questa quello quella"
    ),
    questions=_words(
        "chi che cosa quando dove perché quale quali quanto quanta quanti quante puoi può "
        "potresti sai"
    ),
    acknowledgements=_words(
        "ok okay va bene grazie mille perfetto ottimo benissimo sì si no certo d'accordo buona "
        "buonanotte notte giornata serata ciao salve arrivederci a dopo domani capito fatto super "
        "grande fantastico top ah oh alto buongiorno buonasera lascia stare niente non importa"
        " tesoro amore"
    ),
    # Only imperatives unlike the indicative ("accendi", not "accende"), or a statement rarely
    # opens with; never "chiama" or "manda" (Italian drops the subject: "Chiama ogni sera").
    commands=_words(
        "accendi spegni metti imposta alza abbassa aumenta diminuisci apri chiudi blocca sblocca "
        "riproduci ferma avvia riprendi salta silenzia attiva disattiva mostra dimmi leggi "
        "aggiungi annulla raccontami"
    ),
    courtesies=_words("per favore piacere ehi ok okay alto e poi ora adesso"),
    changes=_words(
        "ora adesso ormai invece cambiato cambiata spostato spostata trasferito nuovo nuova "
        "realtà più ancora stesso stessa correzione sbagliato"
    ),
    values=_words(
        "lunedì martedì mercoledì giovedì venerdì sabato domenica settimana mese anno gennaio "
        "febbraio marzo aprile maggio giugno luglio agosto settembre ottobre novembre dicembre "
        "uno tre quattro cinque sei sette otto nove dieci undici dodici quindici venti trenta "
        "mezza mezzo quarto mezzogiorno mezzanotte mattina pomeriggio sera notte ore oggi domani "
        "quotidiano settimanale mensile presto tardi ogni"
    ),
    elided=_words("l dell dall nell sull all coll un d c quest quell tutt"),
    kin=_kin(
        mother="madre, mamma",
        father="padre, papà, babbo",
        parent="genitori",
        partner_m="marito, compagno",
        partner_f="moglie, compagna",
        child="figli",
        child_m="figlio",
        child_f="figlia, figlie",
        sibling="fratelli",
        sibling_m="fratello",
        sibling_f="sorella, sorelle",
        grandmother="nonna",
        grandfather="nonno",
        grandparent="nonni",
        grandchild="nipotini",
        grandchild_m="nipotino",
        grandchild_f="nipotina",
        mother_in_law="suocera",
        father_in_law="suocero",
        parent_in_law="suoceri",
        child_in_law_m="genero",
        child_in_law_f="nuora",
    ),
    kin_alone=_words("mamma papà babbo nonna nonno"),
    possessives=_words("mio mia miei mie nostro nostra nostri nostre"),
    finite=_words("è sono era erano hanno aveva avevano"),
)

# By Alto's language order; a tie in `detect` goes to the first.
LANGUAGES: Final[Mapping[str, Language]] = MappingProxyType(
    {lang.code: lang for lang in (ENGLISH, GERMAN, FRENCH, SPANISH, DUTCH, ITALIAN)}
)


_LISTS = (
    "function_words",
    "questions",
    "acknowledgements",
    "commands",
    "courtesies",
    "changes",
    "values",
    "elided",
    "clitics",
)

# What tells each language: every word of its lists, elisions and clitics apart (they tell it only
# beside their apostrophe).
_MARKERS: Final = tuple(
    (
        lang,
        frozenset().union(*(getattr(lang, p) for p in _LISTS if p not in ("elided", "clitics"))),
        lang.elided,
        lang.clitics,
    )
    for lang in LANGUAGES.values()
)


def detect(words: Iterable[str]) -> Language:
    """The language of a text's casefolded `words`: the one most of them tell (`_MARKERS`).

    A word with an apostrophe counts as written and by its pieces, an elision only before the
    apostrophe and a clitic only after it ("l'école" is also "l" and "école", "m'n" "m" for
    French and "n" for Dutch); a letter standing alone (a clothing size "M") tells nothing unless
    a language lists it as a word. Ties go to the first in LANGUAGES: English when no word tells.
    """
    counts = [0] * len(_MARKERS)
    for word in words:
        pieces = word.split("'")
        for i, (_, markers, elided, clitics) in enumerate(_MARKERS):
            if word in markers:
                counts[i] += 1
            if len(pieces) > 1:
                counts[i] += sum(
                    piece in markers or piece in (clitics if j else elided)
                    for j, piece in enumerate(pieces)
                )
    return _MARKERS[counts.index(max(counts))][0]  # the first of equals


def union(part: str) -> frozenset[str]:
    """Every language's words of one list (a `Language` field name): "commands", ..."""
    return frozenset().union(*(getattr(lang, part) for lang in LANGUAGES.values()))


def fingerprint() -> list[object]:
    """Every list and flag here, in a stable order (`corpus.LEXICON` hashes it)."""
    return [
        [
            lang.code,
            lang.stemmer,
            *(sorted(getattr(lang, part)) for part in _LISTS),
            lang.compounds,
            lang.genitive,
            sorted(lang.particles),
            sorted(lang.switches),
            sorted(lang.finite),
        ]
        for lang in LANGUAGES.values()
    ]
