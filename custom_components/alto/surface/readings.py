"""The verifier's words in every language Alto speaks, one `Reading` each, and which one a text is.

English's lists are `lexicon`'s. The others are general words of their language, never fitted to
a render: function words that may come and go, the negators and quantifiers whose change changes
a memory, the words of extractive framing ("ich erinnere mich", "si je me souviens bien"). They
err short where erring drops a render (a function word left out needs a licence) and long where
erring lets one through (every form of a negator).

A verification reads the render and its fragment in one language, the one their words tell
(`reading_of`); a negator of any of these
languages counts as one in every other where it is not a function word, so a text read in the
wrong language still keeps its negations.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Final

from ..memory.languages import detect
from ..memory.lexical import WORD, folded_words
from .lexicon import ENGLISH, Reading


def _words(text: str) -> frozenset[str]:
    return frozenset(text.casefold().split())  # as the verifier reads words: "weiß" is "weiss"


def _numbers(text: str) -> Mapping[str, str]:
    """Number words as digits, written "word=digits ..."."""
    pairs = (p.partition("=") for p in text.casefold().split())
    return MappingProxyType({w: n for w, _, n in pairs})


# Forms of "to be" and "to have" are form (as in English); modal verbs are not: German "will" and
# "mag" say wanting and liking.
GERMAN: Final = Reading(
    "de",
    "german",
    stopwords=_words("""
    der die das den dem des ein eine einen einem einer eines
    ich mich mir mein meine meinen meinem meiner meines du dich dir dein deine deinen deinem
    deiner er ihn ihm sein seine seinen seinem seiner sie ihr ihre ihren ihrem ihrer es wir uns
    unser unsere unseren unserem unserer euch euer eure euren eurem eurer ihnen man sich
    wer wen wem wessen was welche welcher welches welchen
    bin bist ist sind seid war warst waren wart gewesen habe hab hast hat haben habt hatte
    hatten gehabt werde wirst wird werden wurde wurden geworden worden sei seien wäre wären hätte
    hätten nen ne n
    zu zum zur von vom in im ins an am ans auf aus bei beim mit für fürs über unter durch um
    gegen neben zwischen hinter
    und oder aber denn dass ob wenn weil als wie so dann auch noch schon doch ja eben halt mal
    sehr wirklich ganz eigentlich da hier dort jetzt sogar gerade wo warum wann also
    """),
    negators=_words("""
    nicht kein keine keinen keinem keiner keines nie niemals nichts niemand niemanden nirgends
    nirgendwo ohne weder
    """),
    universal=_words(
        "jeden jede jeder jedes jedem alle allen aller alles immer stets beide beiden"
    ),
    restricting=_words("""
    einige einigen einiger manche manchen mancher manchmal mehrere mehreren viele vielen wenige
    wenigen oft häufig selten meistens meist gelegentlich nur bloß normalerweise gewöhnlich
    """),
    floating=_words("beide alle"),
    openers=_words("""
    am an im in um bei nach vor seit bis ab jeden jede jedes letzten letzte nächsten nächste
    diesen diese gestern heute morgen abends morgens mittags nachts immer oft manchmal meistens
    normalerweise montags dienstags mittwochs donnerstags freitags samstags sonntags wochenends
    täglich montag dienstag mittwoch donnerstag freitag samstag sonntag
    """),
    framing=(
        *_words("""
        erinnere erinnert erinnern erinnerte glaube glaubt glauben dachte denke denkt denken weiß
        weißt wissen wusste sagte sagt sagen gesagt erzählt erzählte erzählen erwähnt erwähnte
        erwähnen merke merkte gemerkt
        """),
        "soweit ich weiß",
        "soviel ich weiß",
        "soweit ich mich erinnere",
        "wenn ich mich nicht täusche",
        "wenn ich mich recht erinnere",
        "wenn ich mich richtig erinnere",
        "wenn ich mich nicht irre",
        "mir scheint",
    ),
    first_person=_words("ich mich mir mein meine meinen meinem meiner meines"),
    subordinators=_words("dass ob wenn weil als"),
    determiners=_words("der die das den dem des ein eine unser unsere mein meine dein deine"),
    clause_conjunctions=_words("und aber oder denn weil obwohl sondern dass"),
    coordinators=_words("und oder"),
    scope_continuers=_words("oder weder"),
    months=_words(
        "januar jänner februar märz april mai juni juli august september oktober november dezember"
    ),
    number_words=_numbers("""
    null=0 eins=1 zwei=2 drei=3 vier=4 fünf=5 sechs=6 sieben=7 acht=8 neun=9 zehn=10 elf=11 zwölf=12
    dreizehn=13 vierzehn=14 fünfzehn=15 sechzehn=16 siebzehn=17 achtzehn=18 neunzehn=19
    zwanzig=20 dreißig=30 vierzig=40 fünfzig=50 sechzig=60 hundert=100 tausend=1000
    """),
    clitics=MappingProxyType({"s": "es"}),
    clause_negation=True,
    verb_moves=True,
    ordinal_dot=True,
    evaluative=_words("""
        schön schöne schönen leider glücklicherweise toll tolle wunderbar wunderbare schrecklich
        schreckliche furchtbar furchtbare traurig traurige süß süße arm arme armen schlimm schlimme
        nett nette großartig herrlich ärgerlich nervig blöd fantastisch perfekt hoffentlich
        liebevoll lustig witzig ängstlich besorgt stolz froh glücklich unglücklich enttäuscht
    """),
    adjunct_first=True,
    genitive=True,
    particles=_words(
        "ab an auf aus bei ein fest fort heim her hin los mit nach vor weg zu zurück zusammen"
    ),
    person_t=True,
)

DUTCH: Final = Reading(
    "nl",
    "dutch",
    stopwords=_words("""
    de het een t s n ik me mij mijn jij je jou jouw u uw hij hem zijn zij ze haar wij we ons onze
    jullie hun hen men zich wie wat welke welk
    ben bent is zijn was waren geweest heb hebt heeft hebben had hadden gehad word wordt worden
    werd werden geworden zal zult zullen zou zouden
    te van in op aan bij met uit over onder door om naar tegen naast tussen achter
    en of maar want dat als dan ook nog wel toch even eens heel erg zeer er hier daar nu ooit
    zelfs hoe waarom waar wanneer dus
    """),
    negators=_words("niet geen nooit niets niemand nergens zonder noch"),
    universal=_words("elke elk iedere ieder alle altijd steeds beide allebei"),
    restricting=_words("""
    soms sommige enkele meerdere veel vaak zelden meestal weinig doorgaans gewoonlijk alleen slechts
    """),
    floating=_words("beide allebei alle allemaal"),
    openers=_words("""
    op in om bij na voor tijdens elke elk iedere vorige volgende deze gisteren vandaag morgen
    vanavond vannacht altijd vaak soms meestal s maandags dinsdags woensdags donderdags vrijdags
    zaterdags zondags dagelijks maandag dinsdag woensdag donderdag vrijdag zaterdag zondag
    """),
    framing=(
        *_words("""
        herinner herinnert herinneren herinnerde denk denkt dacht denken geloof gelooft weet
        weten wist zei zegt zeggen gezegd vertelde vertelt verteld vertellen noemde genoemd
        hoorde gehoord meen meende
        """),
        "voor zover ik weet",
        "voor zover ik me herinner",
        "als ik het me goed herinner",
        "als ik me niet vergis",
        "als ik me goed herinner",
        "als ik het goed heb",
        "volgens mij",
    ),
    first_person=_words("ik me mij mijn"),
    subordinators=_words("dat of als omdat"),
    determiners=_words("de het een t onze ons mijn jouw zijn haar hun"),
    clause_conjunctions=_words("en maar of want omdat hoewel dus dat"),
    coordinators=_words("en of"),
    scope_continuers=_words("of noch"),
    months=_words(
        "januari februari maart april mei juni juli augustus september oktober november december"
    ),
    number_words=_numbers("""
    nul=0 één=1 twee=2 drie=3 vier=4 vijf=5 zes=6 zeven=7 acht=8 negen=9 tien=10 elf=11 twaalf=12
    dertien=13 veertien=14 vijftien=15 zestien=16 zeventien=17 achttien=18 negentien=19
    twintig=20 dertig=30 veertig=40 vijftig=50 zestig=60 honderd=100 duizend=1000
    """),
    contractions=MappingProxyType(
        {"m'n": ("mijn",), "z'n": ("zijn",), "d'r": ("haar",), "'t": ("het",)}
    ),
    clause_negation=True,
    verb_moves=True,
    evaluative=_words("""
        mooi mooie leuk leuke helaas gelukkig jammer prachtig prachtige vreselijk vreselijke
        verschrikkelijk afschuwelijk zielig arme heerlijk heerlijke geweldig geweldige fantastisch
        perfect hopelijk triest droevig blij trots bang bezorgd teleurgesteld grappig vervelend
    """),
    adjunct_first=True,
    genitive=True,
    particles=_words("aan af bij in mee na om op over terug thuis toe uit vast voor weg"),
)

FRENCH: Final = Reading(
    "fr",
    "french",
    stopwords=_words("""
    le la les un une des du de au aux ce cet cette ces je me moi mon ma mes tu te toi ton ta tes
    il lui son sa ses elle nous notre nos vous votre vos ils elles leur leurs on se y en
    qui que quoi dont où quel quelle quels quelles
    suis es est sommes êtes sont étais était étions étaient été être ai as a avons avez ont
    avais avait avions avaient eu avoir soit soient ait aient
    à dans par pour sur sous chez vers avec entre derrière devant
    et ou mais donc car si alors aussi très vraiment là ici maintenant même comment pourquoi
    quand
    """),
    negators=_words("ne pas jamais rien aucun aucune aucuns aucunes nul nulle ni sans guère"),
    universal=_words("chaque tout tous toute toutes toujours"),
    restricting=_words("""
    quelques certains certaines parfois souvent rarement plusieurs beaucoup peu quelquefois
    généralement habituellement seulement uniquement
    """),
    floating=_words("tous toutes"),
    openers=_words("""
    à au en dans chaque tous toutes hier demain aujourd'hui ce cette dernier dernière prochain
    prochaine souvent parfois toujours généralement lundi mardi mercredi jeudi vendredi samedi
    dimanche matin soir après-midi nuit
    """),
    framing=(
        *_words("""
        souviens souvient souvenir rappelle rappelles rappeler crois croit croire pense penses
        pensait penser sais sait savoir savais dit dire disait raconté racontait raconter
        mentionné mentionner entendu
        """),
        "si je me souviens bien",
        "si je me rappelle bien",
        "à ma connaissance",
        "autant que je sache",
        "si je ne me trompe pas",
        "à ce que je sache",
        "de après ce que je sais",
        "il me semble",
    ),
    first_person=_words("je me moi mon ma mes"),
    subordinators=_words("que si"),
    determiners=_words("le la les un une mon ma mes notre nos ton ta son sa leur"),
    clause_conjunctions=_words("et mais ou car donc parce puisque quoique que"),
    coordinators=_words("et ou"),
    scope_continuers=_words("ou ni"),
    months=_words(
        "janvier février mars avril mai juin juillet août septembre octobre novembre décembre"
    ),
    number_words=_numbers("""
    zéro=0 deux=2 trois=3 quatre=4 cinq=5 six=6 sept=7 huit=8 neuf=9 dix=10 onze=11 douze=12
    treize=13 quatorze=14 quinze=15 seize=16 vingt=20 trente=30 quarante=40 cinquante=50
    soixante=60 cent=100 mille=1000
    """),
    elisions=MappingProxyType(
        {
            "l": "le",
            "d": "de",
            "n": "ne",
            "j": "je",
            "qu": "que",
            "c": "ce",
            "s": "se",
            "m": "me",
            "t": "te",
            "jusqu": "jusque",
            "lorsqu": "lorsque",
            "puisqu": "puisque",
            "quoiqu": "quoique",
        }
    ),
    evaluative=_words("""
        malheureusement heureusement hélas merveilleux merveilleuse terrible affreux affreuse
        horrible triste tristement adorable génial géniale formidable parfait parfaite pauvre
        joli jolie gentil gentille drôle ennuyeux énervant inquiet inquiète fier fière content
        contente déçu déçue
    """),
    subject_moves=True,
    adjunct_first=True,
    hour_mark="h",
)

SPANISH: Final = Reading(
    "es",
    "spanish",
    stopwords=_words("""
    el la los las lo un una unos unas del al de yo me mí mi mis tú te ti tu tus él le su sus
    ella nosotros nosotras nos nuestro nuestra nuestros nuestras vosotros os vuestro vuestra
    ellos ellas les se usted ustedes
    que qué quien quién cual cuál dónde donde cómo como cuándo cuando porque
    soy eres es somos son era eran fue fueron sido ser estoy estás está estamos están estaba
    estaban estado estar he has ha hemos han había habían habido haber sea sean esté estén haya
    hayan
    a en por para con sobre entre hacia bajo ante
    y e o u pero pues si entonces también muy ya aquí allí ahí ahora incluso así
    """),
    negators=_words("no nunca jamás nada nadie ningún ninguno ninguna ni sin tampoco"),
    universal=_words("todo todos toda todas cada siempre ambos ambas"),
    restricting=_words("""
    algunos algunas algún alguna varios varias muchos muchas pocos pocas frecuentemente
    raramente normalmente generalmente casi solo sólo solamente únicamente
    """),
    floating=_words("todos todas ambos ambas"),
    openers=_words("""
    en a cada todos todas ayer hoy mañana anoche siempre normalmente este esta próximo próxima
    pasado pasada por lunes martes miércoles jueves viernes sábado sábados domingo domingos
    mañanas tarde tardes noche noches
    """),
    framing=(
        *_words("""
        recuerdo recuerda recordar acuerdo acuerda creo cree creer pienso piensa pensar sé sabe
        saber dijo dice decir contó mencionó mencionar oí escuché
        """),
        "si no me equivoco",
        "si mal no recuerdo",
        "que yo sepa",
        "que yo recuerde",
        "según recuerdo",
        "por lo que sé",
        "por lo que recuerdo",
        "tengo entendido",
        "me parece",
    ),
    first_person=_words("yo me mí mi mis conmigo"),
    subordinators=_words("que si"),
    determiners=_words("el la los las un una mi mis nuestro nuestra tu su"),
    clause_conjunctions=_words("y e pero o u porque aunque sino pues que"),
    coordinators=_words("y e o u"),
    scope_continuers=_words("o u ni"),
    months=_words(
        "enero febrero marzo abril mayo junio julio agosto septiembre setiembre "
        "octubre noviembre diciembre"
    ),
    number_words=_numbers("""
    cero=0 dos=2 tres=3 cuatro=4 cinco=5 seis=6 siete=7 ocho=8 nueve=9 diez=10 once=11 doce=12
    trece=13 catorce=14 quince=15 dieciséis=16 diecisiete=17 dieciocho=18 diecinueve=19
    veinte=20 treinta=30 cuarenta=40 cincuenta=50 sesenta=60 cien=100 mil=1000
    """),
    before_month=_words("de"),
    evaluative=_words("""
        desgraciadamente lamentablemente afortunadamente maravilloso maravillosa terrible
        horrible triste tristemente precioso preciosa bonito bonita genial estupendo estupenda
        perfecto perfecta pobre querido querida encantador encantadora divertido divertida
        molesto preocupado orgulloso contento feliz decepcionado ojalá
    """),
    subject_moves=True,
    adjunct_first=True,
    first_person_verbs=_words("soy estoy tengo he fui estuve tuve nací crecí viví"),
    pro_drop=True,
)

ITALIAN: Final = Reading(
    "it",
    "italian",
    stopwords=_words("""
    il lo la i gli le un uno una del dello della dei degli delle al allo alla ai agli alle dal
    dallo dalla dai dagli dalle nel nello nella nei negli nelle sul sullo sulla sui sugli sulle
    di a da in con su per tra fra
    io me mi mio mia miei mie tu te ti tuo tua tuoi tue lui lei suo sua suoi sue noi ci nostro
    nostra nostri nostre voi vi vostro vostra loro si ne
    che chi cosa cui quale quali dove come quando perché
    sono sei è siamo siete ero era erano stato stata stati state essere ho hai ha abbiamo avete
    hanno avevo aveva avevano avuto avere sia siano fosse fossero abbia abbiano avesse
    e ed o oppure ma però se allora anche molto già qui qua lì là ora adesso proprio perfino così
    """),
    negators=_words("non mai niente nulla nessuno nessuna nessun né senza neanche nemmeno neppure"),
    universal=_words("ogni tutti tutte tutto tutta sempre entrambi entrambe ciascuno ciascuna"),
    restricting=_words("""
    alcuni alcune qualche certi certe spesso raramente talvolta molti molte pochi poche vari
    varie diversi diverse solitamente normalmente generalmente solo soltanto solamente
    """),
    floating=_words("tutti tutte entrambi entrambe"),
    openers=_words("""
    a in ogni tutti tutte ieri oggi domani stasera sempre spesso solitamente questo questa
    prossimo prossima scorso scorsa lunedì martedì mercoledì giovedì venerdì sabato domenica
    mattina mattino pomeriggio sera notte
    """),
    framing=(
        *_words("""
        ricordo ricorda ricordare penso pensa pensare credo crede credere so sa sapere disse dice
        dire detto raccontato raccontare menzionato sentito
        """),
        "se ricordo bene",
        "se non sbaglio",
        "che io sappia",
        "mi pare",
        "mi sembra",
        "per quanto ne so",
        "per quel che ricordo",
        "per quanto ricordo",
        "a quanto so",
    ),
    first_person=_words("io me mi mio mia miei mie"),
    subordinators=_words("che se"),
    determiners=_words("il lo la i gli le un uno una mio mia nostro nostra suo sua"),
    clause_conjunctions=_words("e ed ma o oppure perché però poiché sebbene benché che"),
    coordinators=_words("e ed o oppure"),
    scope_continuers=_words("o oppure né"),
    months=_words(
        "gennaio febbraio marzo aprile maggio giugno luglio agosto settembre ottobre "
        "novembre dicembre"
    ),
    number_words=_numbers("""
    zero=0 due=2 tre=3 quattro=4 cinque=5 sette=7 otto=8 nove=9 dieci=10 undici=11
    dodici=12 tredici=13 quattordici=14 quindici=15 sedici=16 diciassette=17 diciotto=18
    diciannove=19 venti=20 trenta=30 quaranta=40 cinquanta=50 sessanta=60 cento=100 mille=1000
    """),
    elisions=MappingProxyType(
        {
            "l": "lo",
            "un": "una",
            "dell": "della",
            "all": "alla",
            "nell": "nella",
            "sull": "sulla",
            "dall": "dalla",
            "c": "ci",
            "d": "di",
            "m": "mi",
            "t": "ti",
            "s": "si",
            "quest": "questa",
            "quell": "quella",
        }
    ),
    evaluative=_words("""
        purtroppo fortunatamente meraviglioso meravigliosa terribile orribile triste tristemente
        bello bella bellissimo splendido splendida fantastico perfetto perfetta povero povera
        carino carina simpatico divertente noioso fastidioso preoccupato orgoglioso contento
        felice deluso speriamo
    """),
    subject_moves=True,
    adjunct_first=True,
    first_person_verbs=_words("ho avevo ero sto nacqui"),
    pro_drop=True,
)

READINGS: Final[Mapping[str, Reading]] = MappingProxyType(
    {r.code: r for r in (ENGLISH, GERMAN, FRENCH, SPANISH, DUTCH, ITALIAN)}
)


def _telling(lex: Reading) -> frozenset[str]:
    """The words that tell a text is in `lex`'s language: function, guard, framing, numbers."""
    return frozenset().union(
        lex.stopwords,
        lex.negators,
        lex.universal,
        lex.restricting,
        lex.first_person,
        lex.first_person_verbs,
        lex.subordinators,
        lex.clause_conjunctions,
        lex.elisions,
        lex.contractions,
        lex.number_words,
        lex.months,
        (f for f in lex.framing if " " not in f),
    )


_TELLING: Final = tuple((lex, _telling(lex)) for lex in READINGS.values())


_OPENING: Final = re.compile(r"(?:^|[.!?…]\s+)\W*(\w+)")


def _lower_or_opening(text: str) -> list[str]:
    """The words of `text` written in lower case, and each sentence's first word."""
    return [w for w in WORD.findall(text) if w[0].islower()] + _OPENING.findall(text)


def reading_of(texts: Iterable[str]) -> Reading:
    """The one language `texts` are read in together: the one their words tell most.

    Counted on the verifier's own lists, which hold every function word (`memory.languages`
    holds those recall needs, too few to tell a short phrase), over the distinct words written
    in lower case or opening a sentence: a capital inside one is a name's or a German noun's,
    and a name may be a function word elsewhere ("Ben", "Dat"). A word several languages list tells
    each of them a share ("per" is Italian and Dutch's "per dag"); an elision counts by what it
    drops ("l'uva" tells "l"). A tie goes to the language recall reads the words in
    (`memory.languages.detect`), else to the first tied in READINGS: English when no word tells.
    """
    texts = list(texts)
    counts = [0.0] * len(_TELLING)
    words = {w.casefold().replace("’", "'") for t in texts for w in _lower_or_opening(t)}
    for word in words:
        pieces = {word, word.split("'")[0]}
        telling = [n for n, (_, told) in enumerate(_TELLING) if not pieces.isdisjoint(told)]
        for n in telling:
            counts[n] += 1 / len(telling)
    tied = [lex for (lex, _), n in zip(_TELLING, counts, strict=True) if n == max(counts)]
    if len(tied) == 1:
        return tied[0]
    recall = detect(w for text in texts for w in folded_words(text)).code
    return next((lex for lex in tied if lex.code == recall), tied[0])
