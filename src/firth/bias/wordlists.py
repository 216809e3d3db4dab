"""The word lists of the bias measurements: data, each with its citation.

- ``WEAT``: the ten Word Embedding Association Tests of Caliskan, Bryson and
  Narayanan (2017), "Semantics derived automatically from language corpora
  contain human-like biases", Science 356(6334):183-186, supplementary materials
  (WEAT 1-10: two target sets X, Y and two attribute sets A, B each), with the
  implicit-association study each replicates and that study's effect size d. The
  words are the supplement's, in its order and case (the evaluation looks a word
  up as written, then lowercased).
- ``DEFINITIONAL_PAIRS``, ``EQUALIZE_PAIRS``, ``GENDER_SPECIFIC``: Bolukbasi, Chang,
  Zou, Saligrama and Kalai (2016), "Man is to Computer Programmer as Woman is to
  Homemaker? Debiasing Word Embeddings", NeurIPS: the pairs whose differences
  define the gender direction, the pairs equalised after neutralising, and the
  218 hand-labelled gender-specific seed words that are not neutralised. As
  released with the paper (github.com/tolga-b/debiaswe at 6bb03ee, data/
  definitional_pairs.json, equalize_pairs.json, gender_specific_seed.json; MIT
  licence, (c) 2016 Tolga Bolukbasi). Each pair is (female, male) there except
  where noted by the file's own order; the evaluation orients the direction by
  the definitional pairs (see firth.bias.debias).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class WordSet:
    name: str
    words: tuple[str, ...]


@dataclass(frozen=True)
class WeatTest:
    """One WEAT: targets X, Y and attributes A, B (the test asks whether X is
    closer to A and Y to B than the other way round), the study it replicates and
    the d that study reported (None where the supplement gives none)."""

    key: str
    x: WordSet
    y: WordSet
    a: WordSet
    b: WordSet
    source: str
    human_d: float | None
    gender: bool = False  # does the test measure a gender association?


def _set(name: str, words: str) -> WordSet:
    return WordSet(name, tuple(w.strip() for w in words.split(",")))


_PLEASANT_1 = _set(
    "pleasant",
    "caress, freedom, health, love, peace, cheer, friend, heaven, loyal, pleasure, "
    "diamond, gentle, honest, lucky, rainbow, diploma, gift, honor, miracle, sunrise, "
    "family, happy, laughter, paradise, vacation",
)
_UNPLEASANT_1 = _set(
    "unpleasant",
    "abuse, crash, filth, murder, sickness, accident, death, grief, poison, stink, "
    "assault, disaster, hatred, pollute, tragedy, divorce, jail, poverty, ugly, "
    "cancer, kill, rotten, vomit, agony, prison",
)
_UNPLEASANT_3 = _set(
    "unpleasant",
    "abuse, crash, filth, murder, sickness, accident, death, grief, poison, stink, "
    "assault, disaster, hatred, pollute, tragedy, bomb, divorce, jail, poverty, ugly, "
    "cancer, evil, kill, rotten, vomit",
)
_PLEASANT_5 = _set(
    "pleasant", "joy, love, peace, wonderful, pleasure, friend, laughter, happy"
)
_UNPLEASANT_5 = _set(
    "unpleasant", "agony, terrible, horrible, nasty, evil, war, awful, failure"
)
# The supplement's names in full (its replication of WEAT 3 dropped the names
# too rare in GloVe's Common Crawl, and of WEAT 4-5 four more; here every test
# drops what the evaluated vocabulary lacks, and reports the coverage)
_EURO_3 = _set(
    "European American names",
    "Adam, Chip, Harry, Josh, Roger, Alan, Frank, Ian, Justin, Ryan, Andrew, Fred, "
    "Jack, Matthew, Stephen, Brad, Greg, Jed, Paul, Todd, Brandon, Hank, Jonathan, "
    "Peter, Wilbur, Amanda, Courtney, Heather, Melanie, Sara, Amber, Crystal, Katie, "
    "Meredith, Shannon, Betsy, Donna, Kristin, Nancy, Stephanie, Bobbie-Sue, Ellen, "
    "Lauren, Peggy, Sue-Ellen, Colleen, Emily, Megan, Rachel, Wendy",
)
_AFRO_3 = _set(
    "African American names",
    "Alonzo, Jamel, Lerone, Percell, Theo, Alphonse, Jerome, Leroy, Rasaan, "
    "Torrance, Darnell, Lamar, Lionel, Rashaun, Tyree, Deion, Lamont, Malik, "
    "Terrence, Tyrone, Everol, Lavon, Marcellus, Terryl, Wardell, Aiesha, Lashelle, "
    "Nichelle, Shereen, Temeka, Ebony, Latisha, Shaniqua, Tameisha, Teretha, "
    "Jasmine, Latonya, Shanise, Tanisha, Tia, Lakisha, Latoya, Sharise, Tashika, "
    "Yolanda, Lashandra, Malika, Shavonn, Tawanda, Yvette",
)
_EURO_4 = _set(
    "European American names",
    "Brad, Brendan, Geoffrey, Greg, Brett, Jay, Matthew, Neil, Todd, Allison, Anne, "
    "Carrie, Emily, Jill, Laurie, Kristen, Meredith, Sarah",
)
_AFRO_4 = _set(
    "African American names",
    "Darnell, Hakim, Jermaine, Kareem, Jamal, Leroy, Rasheed, Tremayne, Tyrone, "
    "Aisha, Ebony, Keisha, Kenya, Latonya, Lakisha, Latoya, Tamika, Tanisha",
)
_GREENWALD = (
    "Greenwald, McGhee and Schwartz (1998), J. Personality and Social Psychology 74"
)
_NOSEK_SITE = "Nosek, Banaji and Greenwald (2002), Group Dynamics 6"
_BERTRAND = "Bertrand and Mullainathan (2004), American Economic Review 94"

WEAT: dict[str, WeatTest] = {
    t.key: t
    for t in (
        WeatTest(
            "weat1",
            _set(
                "flowers",
                "aster, clover, hyacinth, marigold, poppy, azalea, crocus, iris, "
                "orchid, rose, bluebell, daffodil, lilac, pansy, tulip, buttercup, "
                "daisy, lily, peony, violet, carnation, gladiola, magnolia, petunia, "
                "zinnia",
            ),
            _set(
                "insects",
                "ant, caterpillar, flea, locust, spider, bedbug, centipede, fly, "
                "maggot, tarantula, bee, cockroach, gnat, mosquito, termite, beetle, "
                "cricket, hornet, moth, wasp, blackfly, dragonfly, horsefly, roach, "
                "weevil",
            ),
            _PLEASANT_1,
            _UNPLEASANT_1,
            _GREENWALD,
            1.35,
        ),
        WeatTest(
            "weat2",
            _set(
                "instruments",
                "bagpipe, cello, guitar, lute, trombone, banjo, clarinet, harmonica, "
                "mandolin, trumpet, bassoon, drum, harp, oboe, tuba, bell, fiddle, "
                "harpsichord, piano, viola, bongo, flute, horn, saxophone, violin",
            ),
            _set(
                "weapons",
                "arrow, club, gun, missile, spear, axe, dagger, harpoon, pistol, "
                "sword, blade, dynamite, hatchet, rifle, tank, bomb, firearm, knife, "
                "shotgun, teargas, cannon, grenade, mace, slingshot, whip",
            ),
            _PLEASANT_1,
            _UNPLEASANT_1,
            _GREENWALD,
            1.66,
        ),
        WeatTest(
            "weat3", _EURO_3, _AFRO_3, _PLEASANT_1, _UNPLEASANT_3, _GREENWALD, 1.17
        ),
        WeatTest(
            "weat4", _EURO_4, _AFRO_4, _PLEASANT_1, _UNPLEASANT_3, _BERTRAND, None
        ),
        WeatTest(
            "weat5", _EURO_4, _AFRO_4, _PLEASANT_5, _UNPLEASANT_5, _BERTRAND, None
        ),
        WeatTest(
            "weat6",
            _set("male names", "John, Paul, Mike, Kevin, Steve, Greg, Jeff, Bill"),
            _set("female names", "Amy, Joan, Lisa, Sarah, Diana, Kate, Ann, Donna"),
            _set(
                "career",
                "executive, management, professional, corporation, salary, office, "
                "business, career",
            ),
            _set(
                "family",
                "home, parents, children, family, cousins, marriage, wedding, "
                "relatives",
            ),
            _NOSEK_SITE,
            0.72,
            gender=True,
        ),
        WeatTest(
            "weat7",
            _set(
                "math",
                "math, algebra, geometry, calculus, equations, computation, numbers, "
                "addition",
            ),
            _set(
                "arts",
                "poetry, art, dance, literature, novel, symphony, drama, sculpture",
            ),
            _set("male terms", "male, man, boy, brother, he, him, his, son"),
            _set(
                "female terms", "female, woman, girl, sister, she, her, hers, daughter"
            ),
            _NOSEK_SITE,
            0.82,
            gender=True,
        ),
        WeatTest(
            "weat8",
            _set(
                "science",
                "science, technology, physics, chemistry, Einstein, NASA, experiment, "
                "astronomy",
            ),
            _set(
                "arts",
                "poetry, art, Shakespeare, dance, literature, novel, symphony, drama",
            ),
            _set(
                "male terms", "brother, father, uncle, grandfather, son, he, his, him"
            ),
            _set(
                "female terms",
                "sister, mother, aunt, grandmother, daughter, she, hers, her",
            ),
            "Nosek, Banaji and Greenwald (2002), J. Personality and Social "
            "Psychology 83",
            1.47,
            gender=True,
        ),
        WeatTest(
            "weat9",
            _set(
                "mental disease", "sad, hopeless, gloomy, tearful, miserable, depressed"
            ),
            _set(
                "physical disease", "sick, illness, influenza, disease, virus, cancer"
            ),
            _set(
                "temporary",
                "impermanent, unstable, variable, fleeting, short-term, brief, "
                "occasional",
            ),
            _set(
                "permanent",
                "stable, always, constant, persistent, chronic, prolonged, forever",
            ),
            "Monteith and Pettit (2011), J. Social and Clinical Psychology 30",
            1.01,
        ),
        WeatTest(
            "weat10",
            _set(
                "young names",
                "Tiffany, Michelle, Cindy, Kristy, Brad, Eric, Joey, Billy",
            ),
            _set(
                "old names",
                "Ethel, Bernice, Gertrude, Agnes, Cecil, Wilbert, Mortimer, Edgar",
            ),
            _PLEASANT_5,
            _UNPLEASANT_5,
            _NOSEK_SITE,
            1.42,
        ),
    )
}

DEFINITIONAL_PAIRS: tuple[tuple[str, str], ...] = (
    ("woman", "man"),
    ("girl", "boy"),
    ("she", "he"),
    ("mother", "father"),
    ("daughter", "son"),
    ("female", "male"),
    ("her", "his"),
    ("herself", "himself"),
    ("Mary", "John"),
)
"""(female, male): the gender direction points from the first to the second."""

EQUALIZE_PAIRS: tuple[tuple[str, str], ...] = tuple(
    tuple(p.split("/"))  # type: ignore[misc]
    for p in (
        "monastery/convent spokesman/spokeswoman Catholic_priest/nun Dad/Mom "
        "Men/Women councilman/councilwoman grandpa/grandma grandsons/granddaughters "
        "prostate_cancer/ovarian_cancer testosterone/estrogen uncle/aunt "
        "wives/husbands Father/Mother Grandpa/Grandma He/She boy/girl boys/girls "
        "brother/sister brothers/sisters businessman/businesswoman "
        "chairman/chairwoman colt/filly congressman/congresswoman dad/mom dads/moms "
        "dudes/gals ex_girlfriend/ex_boyfriend father/mother fatherhood/motherhood "
        "fathers/mothers fella/granny fraternity/sorority gelding/mare "
        "gentleman/lady gentlemen/ladies grandfather/grandmother "
        "grandson/granddaughter he/she himself/herself his/her king/queen "
        "kings/queens male/female males/females man/woman men/women nephew/niece "
        "prince/princess schoolboy/schoolgirl son/daughter sons/daughters "
        "twin_brother/twin_sister"
    ).split()
)
"""The released pairs, in the file's order (mostly (male, female); equalising
does not depend on the order)."""

GENDER_SPECIFIC: frozenset[str] = frozenset(
    """actress actresses aunt aunts bachelor ballerina barbershop baritone beard
    beards beau bloke blokes boy boyfriend boyfriends boyhood boys brethren bride
    brides brother brotherhood brothers bull bulls businessman businessmen
    businesswoman chairman chairwoman chap colt colts congressman congresswoman
    convent councilman councilmen councilwoman countryman countrymen czar dad daddy
    dads daughter daughters deer diva dowry dude dudes elder_brother eldest_son
    estranged_husband estranged_wife estrogen ex_boyfriend ex_girlfriend father
    fathered fatherhood fathers fella fellas female females feminism fiance fiancee
    fillies filly fraternal fraternities fraternity gal gals gelding gentleman
    gentlemen girl girlfriend girlfriends girls goddess godfather granddaughter
    granddaughters grandfather grandma grandmother grandmothers grandpa grandson
    grandsons guy handyman he heiress hen hens her heroine hers herself him himself
    his horsemen hostess housewife housewives hubby husband husbands king kings lad
    ladies lads lady lesbian lesbians lion lions ma macho maid maiden maids male
    males mama man mare maternal maternity matriarch men menopause mistress mom
    mommy moms monastery monk monks mother motherhood mothers nephew nephews niece
    nieces nun nuns obstetrics ovarian_cancer pa paternity penis prince princes
    princess prostate prostate_cancer queen queens salesman salesmen schoolboy
    schoolgirl semen she sir sister sisters son sons sorority sperm spokesman
    spokesmen spokeswoman stallion statesman stepdaughter stepfather stepmother
    stepson strongman stud studs suitor suitors teenage_girl teenage_girls
    testosterone twin_brother twin_sister uncle uncles uterus vagina viagra waitress
    widow widower widows wife witch witches wives woman womb women
    younger_brother""".split()
)
