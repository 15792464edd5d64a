"""English extraction rules, most specific first (the first rule that fits wins).

Patterns run on folded text (lower case, no accents, straight apostrophes) at
the start of a clause from which fillers ("oh", "well,") and a leading time
phrase ("yesterday") were already removed.
"""

from __future__ import annotations

import re

from truemem_core.language import lexicon as lx
from truemem_core.language.perspective import third_person
from truemem_core.language.rule import Rule, group
from truemem_core.language.text import capitalise, fold, strip_edges

# ------------------------------------------------------------------ renderers


def _name_of(clause: str, match: re.Match[str]) -> str | None:
    words = clause[match.start("name") : match.end("name")].split()
    kept = [w for i, w in enumerate(words) if i == 0 or w[:1].isupper()]
    name = " ".join(capitalise(strip_edges(w)) for w in kept[:3])
    if not re.fullmatch(r"[^\W\d_][\w'\- ]*", name) or fold(kept[0]) in lx.NOT_NAMES:
        return None
    return name


def render_name(clause: str, match: re.Match[str]) -> str | None:
    name = _name_of(clause, match)
    return f"Name is {name}" if name else None


def _render_capitalised_name(clause: str, match: re.Match[str]) -> str | None:
    """ "I'm Ana" names the speaker only when the word is written as a name."""
    word = clause[match.start("name") : match.end("name")]
    return render_name(clause, match) if word[:1].isupper() else None


def _render_call_me(clause: str, match: re.Match[str]) -> str | None:
    name = _name_of(clause, match)
    return f"Prefers to be called {name}" if name else None


def _render_job(clause: str, match: re.Match[str]) -> str | None:
    """ "I'm a senior engineer at Acme" -> "Works as a senior engineer at Acme"."""
    if fold(match.group("head")) in lx.NOT_WORK_EN:
        return third_person(clause, "en")  # "Is a student"
    described = third_person("I'm " + clause[match.start("article") :], "en")
    return "Works as " + described.removeprefix("Is ")


# ------------------------------------------------------------------ building blocks
_ADVERBS = (
    r"(?:\s+(?:also|really|actually|just|still|truly|honestly|definitely|totally|absolutely|"
    r"genuinely|personally|currently|now|kinda|mostly|usually|often|always|sometimes|do|even|"
    r"only|recently|finally|originally|pretty|very|so|quite|super))*"
)
SUBJECT = r"i" + _ADVERBS
AM = r"(?:i\s*'?m|i\s+am)" + _ADVERBS
HAVE = (
    r"(?:i(?:\s+(?:also|still|actually|now|already|just|do))*(?:\s*'?ve|\s+have)"
    r"(?:\s+(?:also|still|actually|got))*|i(?:\s+also)?\s+own)"
)
COUNT = r"(?:" + lx.NUMBER_EN + r"|\d+)"
# Objects that make a like or dislike vague, or about the assistant: "I love that", "I like you".
VAGUE = (
    r"(?!(?:you|it|that|this|them|those|these|him|her|your|yours|ur|u|when|how|what|the\s+way|"
    r"hearing|talking|chatting|to\s+(?:hear|talk|chat|think|say|know|see|help|meet)|"
    r"the\s+idea|so\s+much|a\s+lot(?!\s+of)|too|here|there|one|em|ya|lol|haha\w*|all\s+kinds|"
    r"all\s+sorts|everything|anything|something|nothing|things|stuff|most\s+things|both|"
    r"which|who|whatever|their|his|its|the\s+same|all\s+the|the\s+(?:\w+\s+)?one|every|"
    r"daily|sometimes|often|all\s+the\s+time|be|do|get|"
    r"the\s+(?:first|second|third|last|new|latest|other)\b)\b)"
)
# A fact that points back at the conversation ("I love watching them") is not self-contained.
ANAPHORA = re.compile(
    r".*\b(?:them|it|they|ones|those|these)\b|.*\b(?:favou?rite|the\s+\w+)\s+one\b|.*\bto\s+be$"
)
TIME = (
    r"(?:yesterday|today|tonight|last\s+(?:night|week|weekend|month|year|summer|winter|spring|"
    r"fall|\w+day)|this\s+(?:morning|afternoon|evening|week|weekend)|earlier\s+today|"
    r"(?:a\s+(?:few|couple(?:\s+of)?)|\w+)\s+(?:days|weeks|months|years)\s+ago)"
)
PAST = (
    r"(?:\w+ed|went|got|had|was|were|made|took|saw|came|met|bought|ate|drank|ran|won|lost|"
    r"found|gave|left|spent|visited|flew|drove|wrote|read|heard|began|broke|caught|fell)\b"
)
_LIFE_EVENT = (
    r"(?:just\s+|recently\s+|finally\s+)?(?:graduated|got\s+married|got\s+engaged|got\s+divorced|"
    r"had\s+(?:a|my\s+(?:first|second|third))\s+(?:baby|child|son|daughter)|got\s+promoted|"
    r"got\s+(?:a\s+new|a|my\s+first)\s+job|started\s+(?:a\s+new\s+job|working|my\s+own)|"
    r"retired|adopted|bought\s+(?:a|my\s+first|our\s+first)\s+(?:new\s+)?(?:house|home|car|"
    r"condo|flat|apartment|boat)|lost\s+my|broke\s+my|had\s+(?:\w+\s+)?surgery|"
    r"ran\s+a\s+marathon|won\s+(?:a|an|the|first)|passed\s+(?:my|the)|had\s+twins|became\s+a)\b"
)
_NUMBER_WORD = (
    r"(?:(?:twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)"
    r"(?:[\s-](?:one|two|three|four|five|six|seven|eight|nine))?|(?:thir|four|fif|six|seven|"
    r"eigh|nine)teen|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
)
_NAME = r"(?P<name>[\w'-]+(?:\s+[\w'-]+){0,2})\s*$"

# ------------------------------------------------------------------ rules
RULES: list[Rule] = [
    *group(
        "name",
        4,
        "en",
        [
            r"my\s+(?:first\s+|full\s+)?name\s*(?:is|'s)\s+" + _NAME,
            r"(?:i\s*'?m|i\s+am)\s+called\s+" + _NAME,
        ],
        render=render_name,
    ),
    *group("name", 4, "en", [r"(?:you\s+can\s+)?call\s+me\s+" + _NAME], render=_render_call_me),
    *group(
        "age",
        4,
        "en",
        [
            AM + r"\s+(?:\d{1,3}|" + _NUMBER_WORD + r")(?:\s+(?:years?|yrs?)\s+old|\s+y/?o)?\s*$",
            AM + r"\s+in\s+my\s+(?:early\s+|late\s+|mid[\s-]?)?(?:teens|twenties|thirties|forties|"
            r"fifties|sixties|seventies|eighties|nineties|\d0s)\b",
        ],
    ),
    *group("age", 4, "en", [r"i\s+(?:just\s+)?turned\s+\d{1,2}\b"], kind="episodic"),
    # allergies and health constraints are critical: 4, the highest automatic importance
    *group(
        "health",
        4,
        "en",
        [
            AM + r"\s+(?:severely\s+|deathly\s+|highly\s+)?(?:allergic|intolerant)\s+to\b",
            AM
            + r"\s+(?:a\s+|an\s+)?(?:strict\s+|full[\s-]time\s+|lifelong\s+)?"
            + lx.DIET_EN
            + r"\b",
            AM + r"\s+on\s+(?:a|the)\s+(?:[\w-]+\s+){0,2}diet\b",
            HAVE + r"\s+(?:a\s+|an\s+|severe\s+|mild\s+)*(?:[\w-]+\s+)?"
            r"(?:allergy|allergies|intolerance)\b",
            HAVE
            + r"\s+(?:been\s+diagnosed\s+with\s+)?(?:severe\s+|mild\s+|chronic\s+)?"
            + lx.HEALTH_EN
            + r"\b",
            r"i\s+(?:was\s+)?diagnosed\s+with\b|i\s+suffer\s+from\b",
            r"i(?:\s*'?ve|\s+have)?\s+had\s+(?:to\s+have\s+)?(?:a\s+|an\s+)?"
            + lx.HEALTH_EN
            + r"\b",
            SUBJECT + r"\s+(?:don'?t|do\s+not|can'?t|cannot|can\s+not|never)\s+"
            r"(?:eat|drink|tolerate|digest)\b",
            SUBJECT + r"\s+(?:only\s+)?eat\s+(?:kosher|halal|plant[\s-]based|gluten[\s-]free|"
            r"vegetarian|vegan)\b",
        ],
    ),
    *group(
        "job",
        4,
        "en",
        [
            AM + r"\s+(?P<article>an?)\s+(?:[\w'-]+\s+){0,4}?(?P<head>" + lx.JOBS_EN + r")\b"
            r"(?!\s+(?:of|at)\s+heart)",
        ],
        render=_render_job,
    ),
    *group(
        "job",
        4,
        "en",
        [
            AM + r"\s+(?:the\s+)?(?:[\w-]+\s+){0,2}(?:ceo|cto|cfo|coo|founder|co-?founder|"
            r"owner|head|director|manager|lead|president|vp|principal|dean|captain)\s+"
            r"(?:of|at|for)\b",
            AM + r"\s+(?:retired|unemployed|self[\s-]employed|freelancing|between\s+jobs|"
            r"out\s+of\s+work|a\s+stay[\s-]at[\s-]home\s+(?:mom|mum|dad|parent))\b",
            SUBJECT + r"\s+work(?:ed)?\s+(?:as|at|for|in|with|on|from\s+home|remotely|"
            r"part[\s-]time|full[\s-]time|nights|night\s+shifts?|two\s+jobs)\b",
            AM + r"\s+(?:working|employed)\s+(?:as|at|for|in)\b",
            SUBJECT + r"\s+(?:teach|lecture|tutor)\b",
            SUBJECT + r"\s+(?:own|run|manage|lead|founded|co-?founded)\s+(?:a|an|my\s+own|the|"
            r"our|two|three)\s+(?:[\w'-]+\s+){0,3}(?:business|company|startup|start-up|shop|"
            r"store|restaurant|bakery|cafe|bar|firm|agency|team|department|practice|clinic|farm|"
            r"salon|studio|lab|group|ranch|franchise|consultancy)\b",
            r"my\s+(?:job|profession|occupation|day\s+job)\s+is\b",
            HAVE + r"\s+(?:a|an|my\s+own)\s+(?:[\w'-]+\s+){0,3}(?:business|company|startup|"
            r"shop|store|restaurant|bakery|firm|agency|practice|clinic|farm|salon|studio)\b",
            SUBJECT + r"\s+work\s+(?:on\s+)?(?:my|our|the|a)\s+(?:[\w'-]+\s+){0,2}(?:farm|ranch|"
            r"shop|store|restaurant|family\s+business)\b",
            AM + r"\s+(?:an?\s+)?ex[\s-]?(?:military|marine|soldier|cop|police|army|navy|con|"
            r"convict|teacher|nurse|smoker|addict)\b",
            AM + r"\s+in\s+the\s+(?:army|navy|air\s+force|marines|military|national\s+guard|"
            r"coast\s+guard|police\s+force|reserves)\b",
            SUBJECT + r"\s+\w+\s+(?:[\w'-]+\s+){0,4}for\s+a\s+living\b",
            r"i\s*'?ve\s+been\s+(?:working|leading|managing|running|teaching|heading)\b",
            SUBJECT + r"\s+(?:serve|served)\s+in\s+the\s+(?:army|navy|military|air\s+force|"
            r"marines|national\s+guard)\b",
        ],
    ),
    *group(
        "education",
        3,
        "en",
        [
            AM + r"\s+(?:studying|majoring\s+in|in\s+(?:college|school|high\s+school|"
            r"grad\s+school|university|med\s+school|law\s+school|nursing\s+school)|"
            r"a\s+(?:college|university|high\s+school|grad|graduate|phd|medical|law|nursing)"
            r"\s+student)\b",
            SUBJECT + r"\s+(?:study|majored\s+in|major\s+in|studied|graduated\s+(?:from|in|with)|"
            r"go\s+to\s+(?:college|school|university|high\s+school))\b",
            HAVE + r"\s+(?:got\s+|earned\s+)?(?:a|an|my)\s+(?:\w+\s+)?(?:degree|masters?|phd|"
            r"diploma|bachelor'?s)\b",
        ],
    ),
    *group("location", 3, "en", [SUBJECT + r"\s+live\s+with\b"]),
    *group(
        "location",
        4,
        "en",
        [
            SUBJECT + r"\s+(?:live|reside)\s+(?:in|on|at|near|outside|by|just|close|downtown|"
            r"abroad|alone|overseas|up|down|out)\b",
            AM + r"\s+(?:living|based|located|staying)\s+(?:in|on|at|near|outside)\b",
            SUBJECT + r"\s+(?:moved|relocated)\s+(?:to|into|in|here|back|from|out)\b",
            AM + r"\s+(?:originally\s+)?from\b|i\s+come\s+from\b",
            r"i\s+was\s+born\s+(?:and\s+raised\s+)?(?:in|on|near)\b",
            r"my\s+(?:home\s*town|home|city)\s+is\b",
        ],
    ),
    *group("location", 3, "en", [r"i\s+(?:grew\s+up|was\s+raised)\s+(?:in|on|near|around)\b"]),
    *group(
        "family",
        3,
        "en",
        [
            r"(?:my\s+" + lx.FAMILY_EN + r"\s+and\s+i|me\s+and\s+my\s+" + lx.FAMILY_EN + r")\s+\w",
            HAVE + r"\s+" + COUNT + r"\s+(?:[\w'-]+\s+){0,2}?" + lx.FAMILY_EN + r"\b",
            SUBJECT + r"\s+(?:don'?t|do\s+not)\s+have\s+(?:any\s+)?" + lx.FAMILY_EN + r"\b",
            r"my\s+(?:\w+\s+)?" + lx.FAMILY_EN + r"(?:'s\s+name)?\s+(?:is|was|are|were|works|"
            r"worked|lives|lived|has|had|loves|likes|just|passed|got|plays|goes|teaches|owns|"
            r"runs|studies|named|called|will|'s|can|\w+ed|taught|left|gave|made|spends|died|"
            r"always|never)\b",
            AM + r"\s+(?:happily\s+|recently\s+|newly\s+|not\s+)?(?:married|single|divorced|"
            r"engaged|widowed|separated|dating|in\s+a\s+relationship|a\s+(?:single\s+|new\s+|"
            r"proud\s+|first[\s-]time\s+)?(?:mom|mum|mother|dad|father|parent|grandmother|"
            r"grandma|grandfather|grandpa|grandparent|widow|widower|twin|newlywed)|"
            r"an\s+only\s+child|the\s+(?:oldest|youngest|eldest|middle)\s+(?:of|child|sibling|"
            r"kid|son|daughter))\b",
            AM + r"\s+getting\s+married\b|i\s*'?ve\s+been\s+married\b",
            AM + r"\s+(?:expecting|pregnant\s+with)\s+(?:a\s+baby|twins|triplets|a\s+boy|a\s+girl|"
            r"my\s+first|our\s+first|a\s+child)\b",
            SUBJECT + r"\s+married\s+(?:a|an|my)\b",
            AM + r"\s+in\s+(?:an?\s+)?(?:[\w-]+\s+){0,2}relationship\b",
            r"my\s+(?:best\s+|closest\s+|oldest\s+)?(?:friend|friends|roommate|roommates|"
            r"neighbou?rs?|boss|coworkers?|co-workers?|colleagues?)\s+(?:is|are|was|were|all)\b",
        ],
    ),
    *group(
        "pets",
        3,
        "en",
        [
            r"(?:"
            + HAVE
            + r"|i\s+(?:adopted|rescued))\s+"
            + COUNT
            + r"\s+(?:[\w'-]+\s+){0,2}?"
            + lx.PETS_EN
            + r"\b",
            r"my\s+(?:[\w'-]+\s+)?" + lx.PETS_EN + r"(?:'s\s+name)?\s+(?:is|was|are|named|"
            r"called|loves|likes|has|'s|just)\b",
        ],
    ),
    *group(
        "preference",
        3,
        "en",
        [
            SUBJECT
            + r"\s+(?:love|like|enjoy|adore|prefer|dig|fancy|appreciate|treasure)\s+"
            + VAGUE,
            AM + r"\s+(?:a\s+)?(?:big|huge|great|massive|real|die[\s-]hard|avid|passionate|"
            r"devoted)?\s*(?:fan|lover|enthusiast|fanatic|nut|buff|junkie|addict)\s+of\b",
            AM + r"\s+(?:into|passionate\s+about|obsessed\s+with|interested\s+in|"
            r"fascinated\s+by|crazy\s+about|keen\s+on|fond\s+of|addicted\s+to)\s+" + VAGUE,
            SUBJECT + r"\s+(?:hate|dislike|detest|loathe|despise|can'?t\s+stand|cannot\s+stand|"
            r"don'?t\s+(?:like|enjoy|care\s+for)|do\s+not\s+(?:like|enjoy))\s+" + VAGUE,
            AM + r"\s+not\s+(?:a\s+)?(?:big\s+|huge\s+)?(?:fan\s+of|into)\s+" + VAGUE,
            AM + r"\s+(?:afraid|scared|terrified)\s+of\b",
            r"my\s+(?:\w+\s+){0,2}?(?:favou?rite|fave|fav)\s+(?:[\w-]+\s+){0,3}?"
            r"(?:is|are|was|'s)\s+" + VAGUE,
            r"my\s+(?:hobby|hobbies|passion|passions)\s+(?:is|are|include)\b",
            r"(?!(?:it|that|this|which|there|what|family|work|life)\b)[\w'-]+(?:\s+[\w'-]+){0,3}"
            r"\s+(?:is|are)\s+(?:definitely\s+|really\s+)?my\s+(?:passion|hobby|"
            r"favou?rite\s+\w+|obsession|life)\b",
        ],
    ),
    *group(
        "hobby",
        3,
        "en",
        [
            SUBJECT + r"\s+(?:play|collect|knit|crochet|sew|paint|draw|sing|dance|swim|jog|"
            r"hike|bike|cycle|ski|snowboard|surf|skate|climb|fish|hunt|garden|bake|cook|read|"
            r"write|travel|volunteer|meditate|practice|train|ride|camp|sail|golf|bowl|box|lift|"
            r"work\s+out|watch|listen\s+to|brew|compete|race|speak|drive|own|wear|attend|use|"
            r"belong\s+to|go\s+to|go\s+\w+ing|spend|binge|stream|grow|raise|breed|foster|"
            r"sculpt|blog|vlog|pray|fly|produce|coach|tend|mentor|"
            r"babysit|design|sell|support|root\s+for|vote|eat|drink|smoke|wake\s+up|get\s+up|"
            r"commute|walk|shop|donate|homeschool|farm|rent|workout|exercise|follow|"
            r"help\s+(?!you|with\s+that)\w+|take\s+care\s+of|care\s+for|try\s+to|"
            r"take\s+(?:\w+\s+){0,2}(?:lessons|classes|class))\s+" + VAGUE + r"\w",
            # making verbs name a hobby, not today's task: "I build furniture", not "the image"
            SUBJECT + r"\s+(?:build|fix|restore|code|program|design|repair|run)\s+"
            r"(?!(?:the|this|that|these|those|it|my|a\s+(?:new\s+)?(?:function|script|query|"
            r"bug|test|feature|page|component))\b)" + VAGUE + r"\w",
            SUBJECT + r"\s+(?:skateboard|surf|ski|snowboard|swim|run|knit|crochet|sew|paint|draw|"
            r"sing|dance|hike|bike|cycle|garden|bake|cook|fish|hunt|meditate|golf|box|jog|climb|"
            r"skate|sail|camp|work\s*out|exercise|volunteer)(?:\s+(?:a\s+lot|every\s+\w+|daily|"
            r"regularly|professionally|competitively|for\s+fun|in\s+my\s+(?:free|spare)\s+time|"
            r"on\s+(?:the\s+)?weekends))?\s*$",
            SUBJECT + r"\s+\w+(?:\s+[\w'-]+){0,5}\s+as\s+a\s+hobby\b",
            AM + r"\s+(?:a|an)\s+(?:big\s+|huge\s+|avid\s+|good\s+|great\s+|decent\s+|"
            r"amateur\s+|passionate\s+|keen\s+)?(?:[\w-]+\s+)?(?:fan|lover|reader|gamer|runner|"
            r"cyclist|hiker|swimmer|traveler|traveller|foodie|cook|baker|gardener|collector|"
            r"photographer|musician|painter|dancer|singer|knitter|golfer|skier|surfer|climber|"
            r"fisherman|hunter|volunteer|enthusiast|geek|nerd|buff|introvert|extrovert|"
            r"night\s+owl|early\s+bird|morning\s+person|night\s+person|cat\s+person|dog\s+person|"
            r"homebody|bookworm|athlete|player|writer|artist|christian|atheist|member)\b",
        ],
    ),
    # current projects and plans: temporary, 2
    *group(
        "project",
        2,
        "en",
        [
            AM + r"\s+(?:working\s+on|building|developing|writing|creating|designing|coding|"
            r"programming|planning|organizing|organising|preparing\s+for|training\s+for|"
            r"learning|studying\s+for|researching|launching|renovating|restoring|"
            r"saving\s+(?:up\s+)?for|trying\s+to|taking\s+(?:a|an)\s+\w+\s+(?:class|course))\s+"
            + VAGUE,
            r"my\s+(?:current\s+|side\s+|main\s+)?(?:project|thesis|startup|goal)\s+(?:is|was)\b",
            AM + r"\s+(?:looking|searching|applying)\s+(?:for|to)\s+(?:a|an|my|some)\s+(?:new\s+)?"
            r"(?:job|house|home|apartment|place|partner|girlfriend|boyfriend|roommate|school|"
            r"college|university|internship|position)\b",
        ],
    ),
    *group(
        "project",
        2,
        "en",
        [
            SUBJECT + r"\s+(?:plan|intend)\s+to\b",
            SUBJECT + r"\s+(?:want|plan|intend)\s+to\s+(?:be|become)\s+(?:a|an)\b",
            AM + r"\s+(?:planning|going)\s+to\s+(?:move|travel|visit|start|retire|"
            r"get\s+married|quit|run|open|launch)\b",
        ],
        kind="episodic",
    ),
    *group("event", 3, "en", [SUBJECT + r"\s+" + _LIFE_EVENT], kind="episodic"),
    # the past: still worth knowing, but it may no longer hold
    *group(
        "past",
        2,
        "en",
        [
            HAVE + r"\s+(?:lived|worked)\s+(?:in|at|for|abroad)\b",
            r"i\s+used\s+to\s+(?:be|work|live|teach|run|own)\b",
        ],
    ),
    *group(
        "event",
        2,
        "en",
        [
            SUBJECT + r"\s+(?:just\s+|recently\s+)?(?:got\s+back|came\s+back|returned)\s+"
            r"(?:home\s+)?from\b",
            SUBJECT + r"\s+(?:just\s+|recently\s+)?(?:visited|traveled|travelled|flew|"
            r"went\s+(?:on\s+(?:a\s+)?(?:trip|vacation|holiday|cruise)|backpacking|abroad))\b",
        ],
        kind="episodic",
    ),
    # self-descriptions in a closed form
    *group(
        "misc",
        3,
        "en",
        [
            SUBJECT + r"\s+can\s+(?:speak|play|cook|bake|swim|dance|sing|draw|paint|drive|fly|"
            r"code|program|knit|sew|run|lift|juggle|move|read|write\s+with|do\s+a)\b",
            HAVE
            + r"\s+(?:met|won|written|published|climbed|run)\s+(?!(?:it|that|this|you|them)\b)",
            SUBJECT + r"\s+(?:don'?t|do\s+not)\s+(?:have|own)\s+(?:a|an|any)\s+(?!(?:clue|idea|"
            r"time|problem|answer|opinion|preference|choice|plans?|favou?rite|question|lot|"
            r"questions|issue|reason|doubt)\b)\w",
            AM + r"\s+on\s+(?:the|a|my)\s+(?:[\w-]+\s+){0,2}(?:team|squad|council|board|"
            r"committee)\b",
            HAVE + r"\s+(?:a|an|two|three|my\s+own)\s+(?:[\w'-]+\s+){0,2}?(?:car|truck|house|"
            r"home|farm|boat|motorcycle|bike|piano|guitar|collection|garden|tattoo|tattoos|"
            r"cabin|apartment|condo|pool|van|jeep|tesla|scar|birthmark|band|podcast|blog|"
            r"channel|youtube\s+channel|shop|job|side\s+job|black\s+belt|library)\b",
            AM + r"\s+(?:\d+\s+(?:feet|ft|foot|cm|meters?)|(?:tall|short|left[\s-]handed|"
            r"right[\s-]handed|bald|shy|introverted|extroverted|religious|bilingual|trilingual|"
            r"an\s+introvert|an\s+extrovert))\b",
        ],
    ),
    # any other "I'm a …": a self-description, unless it is a figure of speech
    *group(
        "identity",
        3,
        "en",
        [
            AM + r"\s+(?:a|an)\s+(?!(?:bit|little(?!\s+(?:girl|boy|kid))|lot|tad|while|moment|"
            r"second|mess|wreck|loss|few|couple|fan|sucker|pain|fool|kind|sort|type|part|way|"
            r"step|touch|good\s+(?:idea|point|question))\b)[\w'-]+",
        ],
    ),
    # last: "I'm Ana" is a name only when nothing above recognised the word
    *group(
        "name",
        4,
        "en",
        [r"(?:i\s*'?m|i\s+am)\s+(?P<name>[a-z][\w'-]+)\s*$"],
        render=_render_capitalised_name,
    ),
]
# A passing event is worth a low-importance memory, and only with a time marker.
MINOR_EVENT = Rule("event", 1, "en", re.compile(SUBJECT + r"\s+" + PAST), "episodic")
TIME_AT_END = re.compile(r"\b" + TIME + r"\s*$")
