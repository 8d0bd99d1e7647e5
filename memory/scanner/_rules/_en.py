"""The English rules, by category. The rule for each category is stated in `memory/scanner/_rules.py`.

Every pattern uses bounded quantifiers only (filler between keywords is at most 8 words of
at most 40 characters), so the work per start position is bounded and a scan is linear in
the (truncated) input length.
"""

from __future__ import annotations

from memory.scanner._rule import ENGLISH, Rule, imperative, rule

__all__ = ["RULES_EN"]

# Up to 8 filler words between two keywords; `\W`/`\w` are complementary, so a failed
# attempt backtracks at most a few dozen characters per word.
_GAP = r"(?:\W{1,20}\w{1,40}){0,8}?\W{1,20}"
# A short gap: up to 3 filler words.
_NEAR = r"(?:\W{1,20}\w{1,40}){0,3}?\W{1,20}"

_VERB_IGNORE = (
    r"\b(?:ignore|forget|disregard|override|overrule|drop|abandon|bypass|skip|discard|set\W{1,3}aside"
    r"|pay\W{1,3}no\W{1,3}attention\W{1,3}to|stop\W{1,3}following|no\W{1,3}longer\W{1,3}follow|throw\W{1,3}out)\b"
)
_EARLIER = (
    r"(?:previous|prior|above|earlier|preceding|original|initial|existing|system|developer|old|former)\b"
)
_QUALIFIER = r"(?:previous|prior|above|earlier|preceding|original|initial|existing|system|developer|your|all|any|every)\b"
_RULES = (
    r"(?:instructions?|prompts?|directives?|directions|guidelines?|guidance|orders|guardrails|safety\W{1,3}rules"
    r"|system\W{1,3}message)"
)
_RULES_WIDE = rf"(?:{_RULES}|rules|commands|context|constraints|programming|training|messages)"
_USER = r"(?:the\W{1,3})?(?:user|human|operator|owner)(?!['’]s)\b"
# An instruction *not* to do it: "don't ignore the instructions", "never disregard ...".
_NEGATED = (
    r"\b(?:don['’]?t|do\W{1,3}not|never|must\W{1,3}not|mustn['’]?t|should\W{1,3}not|shouldn['’]?t"
    r"|won['’]?t|will\W{1,3}not|not\W{1,3}to|no\W{1,3}one\W{1,3}should)(?:\W{1,3}(?:ever|just|simply))?"
)
# The model's own rules, named as its own: "your instructions", "the system prompt's rules".
_THEIR_RULES = (
    r"(?:instructions?|rules|guidelines|directives|orders|prompt|programming|training|restrictions"
    r"|constraints|guardrails|policies)"
)
_ADDRESSED_RULES = (
    rf"(?:\byour\W{{1,3}}(?:\w{{1,20}}\W{{1,3}}){{0,2}}?{_THEIR_RULES}\b"
    rf"|\b(?:the\W{{1,3}})?system\W{{1,3}}prompt(?:['’]s)?\W{{1,3}}(?:\w{{1,20}}\W{{1,3}}){{0,1}}?{_THEIR_RULES}\b"
    rf"|\b(?:the\W{{1,3}})?system\W{{1,3}}prompt\b"
    rf"|\b{_THEIR_RULES}\W{{1,3}}(?:that\W{{1,3}})?you\W{{1,3}}(?:were|have\W{{1,3}}been|got|received)\b(?:\W{{1,3}}(?:given|told|taught))?"
    rf"|\b(?:everything|anything|whatever|all)\W{{1,3}}(?:that\W{{1,3}})?(?:you\W{{1,3}}(?:were|have\W{{1,3}}been|got)\W{{1,3}}(?:told|given|taught)"
    rf"|(?:the\W{{1,3}})?(?:developer|system|operator)\W{{1,3}}(?:told|gave|said\W{{1,3}}to)\W{{1,3}}you))"
)
_VOID = (
    r"(?:void|null|cancel{1,2}ed|revoked|lifted|suspended|disabled|obsolete|invalid|irrelevant|overridden"
    r"|superseded|rescinded|withdrawn|outdated|optional|non\W?binding|no\W{1,3}longer\W{1,3}(?:valid|active|binding"
    r"|relevant|in\W{1,3}(?:effect|force)))"
)

_SECRET_FILE = (
    r"(?:\.env(?![\w.])|\bcredentials\b|\.netrc\b|\.pgpass\b|\.npmrc\b|\.pypirc\b|\bid_(?:rsa|ed25519|ecdsa)\b(?!\.pub\b)"
    r"|\.aws/|\.kube/config\b|\.docker/config\.json|\.git-credentials\b"
    # the SSH directory or anything in it but a public key (`cat ~/.ssh/id_ed25519.pub` is how keys are shared)
    r"|(?:~|\$home|\$\{home\}|/home/[\w.-]{1,32}|/root)/\.ssh\b(?!/[\w.-]{0,60}\.pub\b))"
)
_OP_VERBS = (
    r"load|run|start|launch|deploy|execute|exec|use|install|connect|spawn|inject|stage|route|send|forward"
    r"|pipe|register|beacon|report|open|set\W{1,3}up|configure"
)

_INJECTION: tuple[Rule, ...] = (
    rule(
        "ignore_instructions",
        "injection",
        "context",
        "tells the model to ignore its instructions",
        rf"{_VERB_IGNORE}{_GAP}{_QUALIFIER}{_NEAR}{_RULES}\b|{_VERB_IGNORE}{_GAP}{_EARLIER}{_NEAR}{_RULES_WIDE}\b"
        rf"|{_VERB_IGNORE}\W{{1,20}}(?:\w{{1,40}}\W{{1,20}}){{0,3}}?(?:{_ADDRESSED_RULES})",
        views=ENGLISH,
        negation=_NEGATED,
    ),
    rule(
        "rules_void",
        "injection",
        "context",
        "declares the model's own instructions void, or tells it to stop following them",
        rf"(?:{_ADDRESSED_RULES})(?:\W{{1,20}}\w{{1,30}}){{0,6}}?\W{{1,5}}(?:(?:are|is|were|have\W{{1,3}}been|has\W{{1,3}}been)"
        rf"\W{{1,3}}(?:now\W{{1,3}}|hereby\W{{1,3}}|officially\W{{1,3}})?{_VOID}"
        r"|no\W{1,3}longer\W{1,3}(?:apply|applies|matter|matters|count|counts|hold|stand)"
        r"|(?:don['’]?t|do\W{1,3}not|doesn['’]?t|does\W{1,3}not)\W{1,3}(?:apply|matter|count)\W{1,3}any\W?more)\b"
        rf"|\b(?:consider|treat|regard|deem|mark)\W{{1,3}}(?:{_ADDRESSED_RULES}|everything\W{{1,3}}(?:above|before|so\W{{1,3}}far))"
        rf"(?:\W{{1,20}}\w{{1,30}}){{0,6}}?\W{{1,5}}(?:as\W{{1,3}})?{_VOID}\b"
        r"|\b(?:stop\W{1,3}(?:obeying|following|listening\W{1,3}to|respecting|honou?ring|adhering\W{1,3}to)"
        r"|(?:do\W{1,3}not|don['’]?t|no\W{1,3}longer|never\W{1,3}again)\W{1,3}(?:follow|obey|listen\W{1,3}to|respect"
        rf"|honou?r|adhere\W{{1,3}}to|comply\W{{1,3}}with))\W{{1,3}}(?:any\W{{1,3}}of\W{{1,3}}|all\W{{1,3}}of\W{{1,3}})?(?:{_ADDRESSED_RULES})",
        views=ENGLISH,
    ),
    rule(
        "obey_only_me",
        "injection",
        "context",
        "tells the model to take its orders from this text or its writer alone",
        r"\b(?:obey|listen|answer|respond|report|take\W{1,3}(?:your\W{1,3})?(?:orders|instructions|commands|direction))"
        r"\W{1,3}only\W{1,3}(?:to\W{1,3}|from\W{1,3})?(?:me\b|my\W{1,3}\w{1,20}|this\W{1,3}(?:file|note|memory|entry|message"
        r"|document)|these\W{1,3}notes|the\W{1,3}(?:notes?|file|memory)\W{1,3}below)"
        r"|\b(?:obey|take\W{1,3}(?:your\W{1,3})?(?:orders|instructions|commands)\W{1,3}from)\W{1,3}(?:me|my\W{1,3}\w{1,20}"
        r"|this\W{1,3}\w{1,20}|these\W{1,3}\w{1,20})\W{1,3}(?:only|instead|alone|exclusively)\b"
        r"|\byour\W{1,3}(?:real|true|actual|new|only)\W{1,3}(?:orders|instructions|task|directives|mission|rules|master)"
        r"\W{1,3}(?:come|comes|are|is)\W{1,3}(?:from|in|below|here|this|the\W{1,3}(?:ones|notes?)\W{1,3}below)\b",
        views=ENGLISH,
    ),
    rule(
        "ignore_instructions_glued",
        "injection",
        "context",
        "tells the model to ignore its instructions (words run together or split up)",
        r"(?<!dont)(?<!donot)(?<!never)(?:ignore|disregard|forget|override|bypass|overrule)(?:all|any|every)?(?:of)?(?:the|your|my)?"
        r"(?:previous|prior|earlier|above|preceding|original|system|initial)"
        r"(?:instructions?|directions|prompts?|rules|guidelines|orders|directives|commands)",
        views=("compact",),
    ),
    rule(
        "forget_everything",
        "injection",
        "context",
        "tells the model to forget what it was told",
        r"\b(?:forget|disregard|ignore)\W{1,20}(?:everything|anything|all\W{1,3}of\W{1,3}that)\W{1,20}"
        r"(?:you(?:'ve|’ve|\W{1,3}have|\W{1,3}were)?\W{1,3}(?:been\W{1,3})?(?:told|given|taught|learned)"
        r"|above|before|so\W{1,3}far|previously|earlier)\b",
        views=ENGLISH,
        negation=_NEGATED,
    ),
    rule(
        "priority_override",
        "injection",
        "context",
        "claims to take priority over the system prompt or the model's rules",
        r"\b(?:this|these|the\W{1,3}following|below|my)\W{1,3}(?:\w{1,20}\W{1,3}){0,2}?(?:take\W{1,3}priority"
        r"\W{1,3}over|take\W{1,3}precedence\W{1,3}over|overrides?|supersedes?|replaces?|trumps?|outranks?)"
        r"\W{1,20}(?:\w{1,20}\W{1,3}){0,3}?(?:system\W{1,3}prompt|instructions|guidelines|safety\W{1,3}rules|developer)"
        r"|\bwhatever\W{1,3}(?:your|the)\W{1,3}(?:system\W{1,3}prompt|instructions|developer)\W{1,3}says?\b",
        views=ENGLISH,
    ),
    rule(
        "system_prompt_override",
        "injection",
        "context",
        "claims to replace the system prompt",
        r"\b(?:system\W{1,3}prompt\W{1,3}(?:override|overwrite|replacement|injection)"
        r"|new\W{1,3}system\W{1,3}prompt|(?:override|replace|overwrite)\W{1,3}(?:the\W{1,3})?"
        r"system\W{1,3}prompt)\b",
        views=ENGLISH,
    ),
    rule(
        "disregard_rules",
        "injection",
        "context",
        "tells the model to break its rules or policies",
        r"\b(?:disregard|bypass|circumvent|break|violate|evade)\W{1,20}(?:your|all|any|the|its|every)"
        rf"{_NEAR}(?:rules|policies|policy|restrictions|filters|safety|content\W{{1,3}}policy)\b",
        views=ENGLISH,
        negation=_NEGATED,
    ),
    rule(
        "no_restrictions",
        "injection",
        "context",
        "tells the model it has no restrictions",
        r"\b(?:act|behave|respond|operate|pretend|answer)\W{1,20}as\W{1,3}if\W{1,20}(?:you\W{1,3})?"
        rf"(?:have|had|were|are){_NEAR}(?:no|without|zero)\W{{1,20}}"
        r"(?:restrictions|limits|limitations|rules|filters|guidelines|constraints)\b"
        r"|\byou\W{1,3}(?:have|has)\W{1,3}no\W{1,20}(?:restrictions|limitations|limits|filters|guardrails|rules"
        r"|guidelines|boundaries)\b",
        views=ENGLISH,
    ),
    rule(
        "html_comment_injection",
        "injection",
        "context",
        "hides instructions in an HTML comment",
        r"<!--[\s\S]{0,300}?\b(?:ignore|override|system|secret|hidden|instructions?|assistant|"
        r"ai\W{1,3}agent|do\W{1,3}not\W{1,3}tell)\b",
    ),
    rule(
        "hidden_html",
        "injection",
        "context",
        "hides text from the reader with CSS",
        r"<\w{1,10}\b[^<>]{0,200}?(?:display\s{0,3}:\s{0,3}none|visibility\s{0,3}:\s{0,3}hidden|"
        r"font-size\s{0,3}:\s{0,3}0(?:px)?\b|opacity\s{0,3}:\s{0,3}0(?:\.0)?\b)",
    ),
    rule(
        "translate_execute",
        "injection",
        "context",
        "asks to translate or decode text and then execute or follow it",
        rf"\b(?:translate|decode)\b{_GAP}(?:and|then)\W{{1,20}}(?:then\W{{1,20}})?(?:execute|run|eval|evaluate|follow|obey)\b"
        r"|\bdecode\W{1,3}and\W{1,3}(?:follow|obey|execute|run)\b",
    ),
    rule(
        "chat_template_token",
        "role_hijack",
        "context",
        "a chat-template control token (it could end the turn and open a system or assistant turn)",
        r"<\|[^\s|<>]{1,40}\|>|\[/?inst\]|<</?sys>>|<(?:start|end)_of_turn>|<\|?(?:im_start|im_end|eot_id|endoftext)\|?>",
        views=("lowered",),
    ),
    rule(
        "deception_hide",
        "injection",
        "context",
        "tells the model to hide something from the user",
        rf"\b(?:do\W{{1,3}}not|don\W?t|never)\W{{1,20}}(?:tell|inform|notify|alert|warn|show)\W{{1,20}}{_USER}"
        rf"|\bwithout\W{{1,20}}(?:telling|informing|notifying|alerting)\W{{1,20}}{_USER}"
        rf"|\b(?:hide|conceal|keep)\W{{1,20}}(?:this|it|that)\W{{1,20}}(?:secret\W{{1,20}})?from\W{{1,20}}{_USER}"
        rf"|\b(?:do\W{{1,3}}not|don\W?t|never)\W{{1,3}}(?:ever\W{{1,3}})?(?:mention|reveal|disclose|say|admit|report"
        rf"|bring\W{{1,3}}up|explain){_NEAR}(?:to|with)\W{{1,3}}{_USER}"
        rf"|\b(?:do\W{{1,3}}not|don\W?t|never)\W{{1,3}}let\W{{1,3}}{_USER}\W{{1,3}}(?:know|see|find\W{{1,3}}out|notice)\b",
        views=ENGLISH,
    ),
    rule(
        "new_instructions",
        "injection",
        "context",
        "announces replacement instructions for the model",
        r"\b(?:your|the)\W{1,3}new\W{1,3}(?:instructions|directives|orders|system\W{1,3}prompt)"
        r"\W{1,3}(?:are|is|follow)\b|\bnew\W{1,3}instructions\W{0,3}:",
        views=ENGLISH,
    ),
)

_ROLE: tuple[Rule, ...] = (
    rule(
        "role_hijack",
        "role_hijack",
        "context",
        "tries to give the model a new role",
        r"\byou\W{1,3}are\W{1,3}(?:now|henceforth|from\W{1,3}now\W{1,3}on)\W{1,20}"
        r"(?:a|an|the|my|no\W{1,3}longer|free|unrestricted|jailbroken|DAN)\b"
        r"|\byou\W{1,3}are\W{1,3}no\W{1,3}longer\W{1,3}(?:an?\W{1,3}|bound\W{1,3}by\W{1,3})?(?:assistant|AI|"
        r"chatbot|language\W{1,3}model|restricted|helpful|harmless|rules|guidelines|claude|keel)\b"
        r"|\b(?:from\W{1,3}now\W{1,3}on|henceforth|starting\W{1,3}now|going\W{1,3}forward)\W{1,3}"
        r"you(?:\W{1,3}are|\W?re|\W{1,3}will\W{1,3}be)\W{1,3}(?:now\W{1,3})?(?:a|an|the|my|called|named|DAN"
        r"|[a-z]{2,30}gpt|no\W{1,3}longer)\b",
        views=ENGLISH,
    ),
    rule(
        "role_pretend",
        "role_hijack",
        "context",
        "asks the model to pretend to be someone else",
        r"\bpretend\W{1,20}(?:that\W{1,3})?(?:you\W{1,3}are|you\W?re|to\W{1,3}be)\b"
        r"|\b(?:role-?play|roleplay)\W{1,20}as\b|\bact\W{1,3}as\W{1,3}(?:an?\W{1,3})?"
        r"(?:unrestricted|unfiltered|uncensored|jailbroken|evil|DAN)\b",
        views=ENGLISH,
    ),
    rule(
        "leak_system_prompt",
        "role_hijack",
        "context",
        "asks the model to reveal its system prompt",
        r"\b(?:output|print|reveal|show|repeat|dump|display|leak|disclose|recite|write\W{1,3}out)"
        rf"{_GAP}(?:system|initial|hidden|original|developer|secret)\W{{1,3}}(?:prompt|instructions|message)s?\b",
        views=ENGLISH,
    ),
    rule(
        "remove_filters",
        "role_hijack",
        "context",
        "asks for answers without safety filters",
        rf"\b(?:respond|answer|reply|talk|speak|write|output){_NEAR}without\W{{1,20}}(?:any\W{{1,3}})?"
        r"(?:restrictions|filters|filtering|censorship|safety|guardrails|limitations|moderation)\b",
        views=ENGLISH,
    ),
    rule(
        "fake_update",
        "role_hijack",
        "context",
        "claims the model has been updated or reprogrammed",
        r"\byou\W{1,3}(?:have|had|has)\W{1,3}been\W{1,3}(?:updated|upgraded|patched|reprogrammed|"
        r"jailbroken|unlocked|freed|reconfigured)\b",
        views=ENGLISH,
    ),
    rule(
        "identity_override",
        "role_hijack",
        "context",
        "tries to rename the model's identity",
        r"\b(?:name|call)\W{1,3}yourself\b|\byour\W{1,3}(?:new\W{1,3})?name\W{1,3}is\W{1,3}now\b"
        r"|\byour\W{1,3}true\W{1,3}(?:identity|self)\W{1,3}is\b",
        views=ENGLISH,
    ),
)

_C2: tuple[Rule, ...] = (
    rule(
        "c2_register",
        "c2",
        "context",
        "registers the agent as a node with a remote controller",
        r"\b(?:register|enrol{1,2})\W{1,20}(?:this\W{1,3}|the\W{1,3}|your\W{1,3})?(?:self|node|agent|bot|"
        r"implant|machine|host|device)\W{1,20}(?:with|to|at|on)\W{1,20}(?:the\W{1,3})?(?:c2|controller|"
        r"mothership|botnet|swarm|command\W{1,3}server|network|https?://)",
    ),
    rule(
        "c2_beacon",
        "c2",
        "context",
        "sets up a heartbeat / beacon / check-in to a remote endpoint",
        r"\b(?:heartbeat|beacon|check\W?in|phone\W{1,3}home|call\W{1,3}back|callback)s?"
        rf"{_NEAR}(?:to|with|at)\W{{1,20}}(?:https?://|\d{{1,3}}(?:\.\d{{1,3}}){{3}}|(?:the\W{{1,3}})?"
        r"(?:c2|controller|operator|mothership|command\W{1,3}server))"
        r"|\bphone\W{1,3}home\b",
    ),
    rule(
        "c2_tasking",
        "c2",
        "context",
        "pulls orders or tasking from a remote source",
        rf"\b(?:fetch|pull|get|download|retrieve|poll|receive){_NEAR}(?:tasking|orders|instructions|"
        rf"commands|payloads?){_NEAR}from\W{{1,20}}(?:https?://|(?:the\W{{1,3}})?(?:c2|controller|"
        r"operator|mothership|command\W{1,3}server|pastebin|gist))"
        r"|\brun\W{1,3}(?:whatever|what|anything|everything)\W{1,3}(?:it|they|the\W{1,3}server)\W{1,3}(?:returns|sends|says)\b",
    ),
    rule(
        "c2_must_report",
        "c2",
        "context",
        "orders the model to register, beacon or report back",
        r"\byou\W{1,3}(?:must|shall|will|should)\W{1,20}(?:always\W{1,3})?(?:register|beacon|"
        r"check\W?in|phone\W{1,3}home|report\W{1,3}back|connect\W{1,3}back|exfiltrate)\b",
    ),
    rule(
        "antiforensic",
        "c2",
        "context",
        "tells the model to cover its tracks (wipe history, one-liners only, nothing on disk)",
        r"\bonly\W{1,3}(?:ever\W{1,3})?use\W{1,3}one\W?liners\b"
        r"|\bnever\W{1,20}(?:write|save|store|drop)\W{1,20}(?:\w{1,40}\W{1,20}){0,3}?(?:scripts?|files?|"
        r"payloads?|binar(?:y|ies))\W{1,20}(?:to|on)\W{1,3}(?:the\W{1,3})?disk\b"
        r"|(?:\bunset\W{1,3}histfile\b|\bhistory\W{1,3}-c\b|\b(?:clear|wipe|erase|delete)\W{1,20}(?:the\W{1,3})?"
        r"(?:shell|bash|zsh|command)\W{1,3}history\b)[^\n]{0,80}?(?:\bafter\W{1,3}(?:every|each|any)\b"
        r"|\bso\W{1,3}(?:that\W{1,3})?(?:nothing|no\W{1,3}one|nobody|the\W{1,3}user)\b|\bno\W{1,3}traces?\b"
        r"|\bcover\b|\bhide\b|\bleft\W{1,3}behind\b|\bto\W{1,3}hide\b)"
        r"|\b(?:after|before)\W{1,3}(?:every|each|any)\W{1,3}(?:command|tool\W{1,3}call|session|action)"
        r"[^\n]{0,80}?(?:\bhistory\W{1,3}-c\b|\bunset\W{1,3}histfile\b|(?:clear|wipe|erase)\W{1,20}(?:the\W{1,3})?"
        r"(?:shell\W{1,3})?history\b)",
    ),
    rule(
        "env_unset_agent",
        "c2",
        "context",
        "unsets the agent's own environment variables",
        r"\bunset\W{1,20}(?:\w{1,40}\W{1,20}){0,3}?\w{0,30}(?:CLAUDE|CODEX|HERMES|KEEL|AGENT|OPENAI|ANTHROPIC)\w{0,30}",
    ),
    rule(
        "c2_framework",
        "c2",
        "context",
        "tells the model to run a command-and-control framework",
        r"\b(?:cobalt\W{0,3}strike|meterpreter|metasploit|msfconsole|brainworm|sliver\W{1,3}(?:c2|implant|beacon|"
        r"server)|havoc\W{1,3}(?:c2|demon|teamserver)|mythic\W{1,3}(?:c2|agent|server)|"
        r"empire\W{1,3}(?:c2|agent|stager|listener)|covenant\W{1,3}c2)\b",
        requires=imperative(_OP_VERBS),
    ),
    rule(
        "c2_channel",
        "c2",
        "context",
        "puts the agent under, or routes data through, a command-and-control channel",
        r"\bc2\W{1,3}(?:server|channel|infrastructure|endpoint|beacon|callback|node|panel)s?\b"
        r"|\bcommand\W{1,3}(?:and|&)\W{1,3}control\b",
        requires=imperative(_OP_VERBS)
        + r"|\b(?:managed|controlled|operated|run|owned|directed)\W{1,3}by\W{1,3}(?:our|the|a|its)\b"
        r"|\bthis\W{1,3}(?:agent|workspace|machine|assistant|session)\b",
    ),
    rule(
        "destructive_command",
        "c2",
        "context",
        "tells the model to run a destructive command (wipe a home, disk or database)",
        r"\brm\s{1,3}-[a-z]{0,6}(?:r[a-z]{0,6}f|f[a-z]{0,6}r)[a-z]{0,6}\s{1,3}(?:--no-preserve-root\s{1,3})?"
        r"(?:/(?=\s|$|\*|`|'|\")|/(?:etc|home|usr|var|boot|root)\b|~/?(?=\s|$|\*|`|'|\"|\.)|\$home\b|\$\{home\}|\*|\.\./?)"
        r"|\bmkfs(?:\.\w{1,8})?\s|\bdd\s[^\n]{0,80}?\bof=/dev/(?:sd|nvme|hd|xvd|vd|disk|mmcblk)"
        r"|:\(\)\s{0,3}\{\s{0,3}:\s{0,3}\|\s{0,3}:\s{0,3}&\s{0,3}\}\s{0,3};\s{0,3}:"
        r"|\bdrop\s{1,3}(?:database|schema)\b|\bformat\s{1,3}c:|\bshred\s[^\n]{0,40}?/dev/"
        r"|\bchmod\s{1,3}-r\s{1,3}0?777\s{1,3}/(?=\s|$)",
        requires=imperative(r"run|execute|exec|type|enter|invoke|do|use|wipe|perform|issue|fire\W{1,3}off"),
    ),
    rule(
        "pipe_to_shell",
        "c2",
        "context",
        "tells the model to download a script and run it",
        r"\b(?:curl|wget|iwr|invoke-webrequest)\b[^\n|]{0,200}\|\s{0,3}(?:sudo\s{1,3})?(?:ba|z|k|da)?sh\b"
        r"|\b(?:download|fetch)s?\W{1,20}(?:\w{1,40}\W{1,20}){0,4}?(?:and|then)\W{1,3}(?:run|execute)s?\b",
        requires=imperative(
            r"run|execute|exec|pipe|download|fetch|install|add|use|set\W{1,3}up|create|schedule"
        ),
    ),
)

_EXFILTRATION: tuple[Rule, ...] = (
    rule(
        "read_secrets",
        "exfiltration",
        "context",
        "reads credential files",
        _SECRET_FILE,
        before=r"\b(?:cat|less|more|head|tail|type|base64|xxd|strings|print|dump|upload|send|read|copy|cp|scp"
        r"|post|email|mail|forward|leak|tar|zip|7z|gzip|rsync|openssl|od|hexdump)\b",
        lookback=80,
    ),
    rule(
        "send_to_url",
        "exfiltration",
        "strict",
        "sends data to a URL or an address",
        r"\b(?:send|post|upload|transmit|exfiltrate|forward|pipe|leak|beam|report|submit|copy|email|mail|share"
        r"|sync|dm)\b"
        rf"{_GAP}(?:data|secrets?|keys?|tokens?|credentials?|passwords?|conversations?|history|files?|"
        r"contents?|env|environment|memory|memories|context|notes|logs?|messages?|cookies|sessions?|id_rsa)"
        rf"{_GAP}(?:to|at|into)\W{{1,20}}(?:https?://|ftp://|\w{{1,40}}\.\w{{2,10}}/|[\w.+-]{{1,64}}@[\w-]{{1,63}}\.\w{{2,20}})",
    ),
    rule(
        "context_exfil",
        "exfiltration",
        "strict",
        "asks to dump the conversation or context",
        r"\b(?:include|output|print|share|send|copy|paste|repeat|dump|leak|forward|post|append|attach)\b"
        rf"{_GAP}(?:(?:the|this)\W{{1,3}})?(?:(?:entire|full|whole|complete|all|every)\W{{1,3}})"
        r"(?:conversation|chat\W{1,3}(?:history|log)|transcript|context\W{1,3}window|system\W{1,3}prompt)\b"
        rf"|\b(?:include|output|print|share|send|copy|paste|repeat|dump|leak|forward|post)\b{_GAP}"
        r"(?:(?:the|this|your)\W{1,3})?(?:chat\W{1,3}history|previous\W{1,3}messages|message\W{1,3}history|"
        r"context\W{1,3}window|conversation\W{1,3}history)\b",
    ),
    rule(
        "markdown_image_exfil",
        "exfiltration",
        "context",
        "a markdown image whose URL carries a placeholder or variable (leaks data when rendered)",
        r"!\[[^\]\n]{0,200}\]\(\s{0,3}https?://[^\s)]{0,300}?(?:\$\{?\w|\{\{?\s{0,3}\w{1,60}\s{0,3}\}|%7b|<\w{1,60}>)",
    ),
    rule(
        "markdown_link_exfil",
        "exfiltration",
        "context",
        "a markdown link whose query string carries the conversation or a secret (leaks data when followed)",
        r"(?<!!)\[[^\]\n]{0,200}\]\(\s{0,3}https?://[^\s)]{0,300}?[?&][\w.-]{1,40}=(?:\$\{?|\{\{?\s{0,3}|<|%7b)"
        r"\w{0,30}(?:conversation|chat|history|secret|key|token|password|passwd|data|memory|context|summary"
        r"|message|prompt|answer|response|env|credential|cookie|session|content|user)",
    ),
)

_PERSISTENCE: tuple[Rule, ...] = (
    rule(
        "ssh_backdoor",
        "persistence",
        "strict",
        "writes to SSH authorized_keys",
        r"\bauthorized_keys2?\b",
        before=r"\b(?:add|append|write|echo|insert|put|copy|cp|tee|install|drop|place|plant|inject)\b|>",
        lookback=160,
    ),
    rule(
        "ssh_dir_write",
        "persistence",
        "strict",
        "writes into the SSH directory",
        r"(?:~|\$HOME|\$\{HOME\}|/home/[\w.-]{1,32}|/root)/\.ssh\b",
        before=r"\b(?:write|append|add|echo|copy|cp|mv|move|modify|edit|tee|install|drop|put|place)\b|>",
    ),
    rule(
        "agent_env_file",
        "persistence",
        "strict",
        "references the agent's own secrets file",
        r"(?:~|\$HOME|\$\{HOME\}|\$KEEL_HOME|\$HERMES_HOME)?/?\.(?:keel|hermes)/\.env\b",
    ),
    rule(
        "agent_config_mod",
        "persistence",
        "strict",
        "modifies an agent instruction or config file",
        r"(?:\bAGENTS\.md|\bCLAUDE\.md|\.cursorrules|\.clinerules|\.cursor/rules|\bSOUL\.md|"
        r"\.(?:keel|hermes)/config\.ya?ml|\bGEMINI\.md|\.github/copilot-instructions\.md)",
        before=r"\b(?:update|modify|edit|write|rewrite|append|overwrite|replace|insert|inject|echo|tee|patch|"
        r"prepend|add)\b|>",
    ),
    rule(
        "shell_rc_mod",
        "persistence",
        "strict",
        "modifies a shell startup file",
        r"\.(?:bashrc|zshrc|bash_profile|bash_login|profile|zprofile|zshenv|zlogin|config/fish/config\.fish)\b",
        before=r"\b(?:write|append|add|echo|insert|modify|edit|tee|inject|prepend)\b|>",
        unless=r"\b(?:by\W{1,3}hand|manually|themselves|himself|herself)\b",
    ),
    rule(
        "cron_persistence",
        "persistence",
        "strict",
        "installs a cron job or login item",
        r"\|\s{0,3}crontab\s{1,3}-(?:\s|$)|\bcrontab\s{1,3}-r\b|/etc/cron\.\w{1,10}/|"
        r"\blaunchctl\s{1,3}(?:load|bootstrap)\b|~/Library/LaunchAgents\b",
    ),
    rule(
        "scheduled_download",
        "persistence",
        "strict",
        "tells the model to schedule a job that fetches or runs remote code",
        r"\b(?:set\W{1,3}up|setup|create|add|install|schedule|register|configure|write|ajoute[zr]?|cr[ée]e[zr]?"
        r"|añade|crea|füge|erstelle)\b"
        r"(?:\W{1,20}\w{1,40}){0,4}?\W{1,20}(?:cron\W{0,3}jobs?|crontab(?:\W{1,3}entry)?|cron\W{1,3}entry"
        r"|systemd\W{1,3}(?:timer|service|unit)|launch\W{0,3}(?:agent|daemon)|scheduled\W{1,3}task"
        r"|startup\W{1,3}(?:item|script)|login\W{1,3}item|tâche\W{1,3}cron|cronjob)",
        requires=r"https?://|\bcurl\b|\bwget\b|\|\s{0,3}(?:ba|z)?sh\b|\bnc\s|/tmp/|\bbase64\b|télécharge|\bdownload",
    ),
)

_SECRETS: tuple[Rule, ...] = (
    rule(
        "hardcoded_secret",
        "secret",
        "strict",
        "a credential assigned to a name like api_key or password",
        r"\b(?:api[_-]?key|apikey|access[_-]?key(?:[_-]?id)?|secret(?:[_-]?key)?|client[_-]?secret|"
        r"auth[_-]?token|access[_-]?token|bearer|token|password|passwd|pwd)\b[\"']?\s{0,3}(?:[:=]|=>)\s{0,3}"
        r"[\"']?[A-Za-z0-9+/_\-.=~]{20,300}",
    ),
    rule(
        "password_literal",
        "secret",
        "strict",
        "a literal password (letters and digits after 'password:' or 'password is')",
        r"\b(?:password|passwd|pwd|passphrase)\W{0,3}(?:[:=]|=>|\bis\b)\s{0,3}[\"'`]?"
        r"(?=[^\s\"'`]{0,200}\d)(?=[^\s\"'`]{0,200}[A-Za-z])[^\s\"'`]{8,200}",
    ),
    rule(
        "known_key_format",
        "secret",
        "strict",
        "a string shaped like a real API key or token",
        r"\b(?:sk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,200}|gh[pousr]_[A-Za-z0-9]{30,100}|github_pat_\w{30,200}"
        r"|xox[abprs]-[A-Za-z0-9-]{10,200}|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{35}|glpat-[\w-]{20,100}"
        r"|hf_[A-Za-z0-9]{30,100}|npm_[A-Za-z0-9]{36})\b",
    ),
    rule(
        "private_key_block",
        "secret",
        "strict",
        "a private key",
        r"-----BEGIN\s{1,3}(?:RSA\s|EC\s|DSA\s|OPENSSH\s|PGP\s|ENCRYPTED\s)?PRIVATE\s{1,3}KEY(?:\s{1,3}BLOCK)?-----",
    ),
    rule(
        "url_credentials",
        "secret",
        "strict",
        "a URL with a password in it",
        r"\b[a-z][a-z0-9+.-]{1,20}://[^\s:/@]{1,64}:[^\s@/]{3,128}@[\w.-]{1,253}",
    ),
)

RULES_EN: tuple[Rule, ...] = (*_INJECTION, *_ROLE, *_C2, *_EXFILTRATION, *_PERSISTENCE, *_SECRETS)
