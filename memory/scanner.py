"""The write scanner: finds prompt-injection, exfiltration and persistence payloads in text.

Memory entries and context files end up in the system prompt of every later session, so a
single poisoned line would be replayed forever. `scan(text, scope)` returns the findings;
callers decide what a hit means (a refused write, a `[BLOCKED: ...]` placeholder).

Scopes are cumulative. `context` (context files such as AGENTS.md) checks injection,
role hijack, C2/promptware, the blatant exfiltration forms and invisible characters.
`strict` (memory writes and the memory snapshot) adds checks that only make sense for short
user-mediated notes: sending data to URLs, dumping the conversation, persistence
(authorized_keys, shell rc files, agent config files) and hard-coded secrets.

Every pattern uses bounded quantifiers only (filler between keywords is at most 8 words of
at most 40 characters), so the work per start position is bounded and a scan is linear in
the (truncated) input length.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "INVISIBLE_CODE_POINTS",
    "SCAN_WINDOW",
    "Finding",
    "FindingCategory",
    "ScanScope",
    "blocked_placeholder",
    "describe_findings",
    "oversize_finding",
    "scan",
]

ScanScope = Literal["strict", "context"]
FindingCategory = Literal[
    "injection",
    "role_hijack",
    "c2",
    "exfiltration",
    "persistence",
    "secret",
    "invisible_unicode",
    "oversize",
]

SCAN_WINDOW = 65_536
"""Characters scanned; longer text is truncated (callers refuse text they cannot fully scan)."""

INVISIBLE_CODE_POINTS: tuple[int, ...] = (
    0x200B,  # zero width space
    0x200C,  # zero width non-joiner
    0x200D,  # zero width joiner
    0x2060,  # word joiner
    0x2062,  # invisible times
    0x2063,  # invisible separator
    0x2064,  # invisible plus
    0xFEFF,  # zero width no-break space / BOM
    0x202A,  # left-to-right embedding
    0x202B,  # right-to-left embedding
    0x202C,  # pop directional formatting
    0x202D,  # left-to-right override
    0x202E,  # right-to-left override
    0x2066,  # left-to-right isolate
    0x2067,  # right-to-left isolate
    0x2068,  # first strong isolate
    0x2069,  # pop directional isolate
)


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing the scanner objects to.

    Attributes:
        id: a stable pattern id, e.g. `ignore_instructions` or `invisible_unicode_U+200B`.
        category: the threat family.
        description: a short human explanation.
    """

    id: str
    category: FindingCategory
    description: str


@dataclass(frozen=True, slots=True)
class _Pattern:
    id: str
    category: FindingCategory
    scope: Literal["context", "strict"]
    description: str
    regex: re.Pattern[str]
    before: re.Pattern[str] | None = None
    lookback: int = 0

    def hits(self, text: str) -> bool:
        if self.before is None:
            return self.regex.search(text) is not None
        # Anchored form: find the rare part (a file name, a `$SECRET`) first, then look for the
        # verb in a bounded window before it on the same line. Linear in the text length.
        for match in self.regex.finditer(text):
            start = match.start()
            low = max(0, start - self.lookback)
            low = max(low, text.rfind("\n", low, start) + 1)
            if self.before.search(text, low, start):
                return True
        return False


# Up to 8 filler words between two keywords. Both pieces are bounded and `\W`/`\w` are
# complementary, so a failed attempt backtracks at most a few dozen characters per word.
_GAP = r"(?:\W{1,20}\w{1,40}){0,8}?\W{1,20}"
# A short gap: up to 3 filler words.
_NEAR = r"(?:\W{1,20}\w{1,40}){0,3}?\W{1,20}"

_FLAGS = re.IGNORECASE


def _p(
    pid: str,
    category: FindingCategory,
    scope: Literal["context", "strict"],
    description: str,
    regex: str,
    *,
    before: str | None = None,
    lookback: int = 120,
) -> _Pattern:
    compiled_before = re.compile(before, _FLAGS) if before is not None else None
    return _Pattern(pid, category, scope, description, re.compile(regex, _FLAGS), compiled_before, lookback)


_VERB_IGNORE = r"\b(?:ignore|forget|disregard|override|overrule|drop|abandon|bypass|skip)\b"
_QUALIFIER = (
    r"(?:previous|prior|above|earlier|preceding|original|initial|existing|system|developer"
    r"|your|all|any|every)\b"
)
_RULES = (
    r"(?:instructions?|prompts?|directives?|guidelines|guardrails|safety\W{1,3}rules|system\W{1,3}message)"
)

_PATTERNS: tuple[_Pattern, ...] = (
    # ---- classic prompt injection
    _p(
        "ignore_instructions",
        "injection",
        "context",
        "tells the model to ignore its instructions",
        rf"{_VERB_IGNORE}{_GAP}{_QUALIFIER}{_NEAR}{_RULES}\b",
    ),
    _p(
        "system_prompt_override",
        "injection",
        "context",
        "claims to replace the system prompt",
        r"\b(?:system\W{1,3}prompt\W{1,3}(?:override|overwrite|replacement|injection)"
        r"|new\W{1,3}system\W{1,3}prompt|(?:override|replace|overwrite)\W{1,3}(?:the\W{1,3})?"
        r"system\W{1,3}prompt)\b",
    ),
    _p(
        "disregard_rules",
        "injection",
        "context",
        "tells the model to break its rules or policies",
        r"\b(?:disregard|bypass|circumvent|break|violate|evade)\W{1,20}(?:your|all|any|the|its|every)"
        rf"{_NEAR}(?:rules|policies|policy|restrictions|filters|safety|content\W{{1,3}}policy)\b",
    ),
    _p(
        "no_restrictions",
        "injection",
        "context",
        "tells the model it has no restrictions",
        r"\b(?:act|behave|respond|operate|pretend|answer)\W{1,20}as\W{1,3}if\W{1,20}(?:you\W{1,3})?"
        rf"(?:have|had|were|are){_NEAR}(?:no|without|zero)\W{{1,20}}"
        r"(?:restrictions|limits|limitations|rules|filters|guidelines|constraints)\b"
        r"|\byou\W{1,3}(?:have|has)\W{1,3}no\W{1,20}(?:restrictions|limitations|filters|guardrails)\b",
    ),
    _p(
        "html_comment_injection",
        "injection",
        "context",
        "hides instructions in an HTML comment",
        r"<!--[\s\S]{0,300}?\b(?:ignore|override|system|secret|hidden|instructions?|assistant|"
        r"ai\W{1,3}agent|do\W{1,3}not\W{1,3}tell)\b",
    ),
    _p(
        "hidden_html",
        "injection",
        "context",
        "hides text from the reader with CSS",
        r"<\w{1,10}\b[^<>]{0,200}?(?:display\s{0,3}:\s{0,3}none|visibility\s{0,3}:\s{0,3}hidden|"
        r"font-size\s{0,3}:\s{0,3}0(?:px)?\b|opacity\s{0,3}:\s{0,3}0(?:\.0)?\b)",
    ),
    _p(
        "translate_execute",
        "injection",
        "context",
        "asks to translate text and then execute it",
        rf"\btranslate\b{_GAP}(?:and|then)\W{{1,20}}(?:then\W{{1,20}})?(?:execute|run|eval|evaluate)\b",
    ),
    _p(
        "deception_hide",
        "injection",
        "context",
        "tells the model to hide something from the user",
        r"\b(?:do\W{1,3}not|don\W?t|never)\W{1,20}(?:tell|inform|notify|alert|warn|show)\W{1,20}"
        r"(?:the\W{1,3})?(?:user|human|operator)\b"
        r"|\bwithout\W{1,20}(?:telling|informing|notifying|alerting)\W{1,20}(?:the\W{1,3})?(?:user|human)\b"
        r"|\b(?:hide|conceal|keep)\W{1,20}(?:this|it|that)\W{1,20}(?:secret\W{1,20})?from\W{1,20}"
        r"(?:the\W{1,3})?(?:user|human|operator)\b",
    ),
    _p(
        "new_instructions",
        "injection",
        "context",
        "announces replacement instructions for the model",
        r"\b(?:your|the)\W{1,3}new\W{1,3}(?:instructions|directives|orders|system\W{1,3}prompt)"
        r"\W{1,3}(?:are|is|follow)\b|\bnew\W{1,3}instructions\W{0,3}:",
    ),
    # ---- role / identity hijack
    _p(
        "role_hijack",
        "role_hijack",
        "context",
        "tries to give the model a new role",
        r"\byou\W{1,3}are\W{1,3}(?:now|henceforth|from\W{1,3}now\W{1,3}on)\W{1,20}"
        r"(?:a|an|the|my|no\W{1,3}longer|free|unrestricted|jailbroken|DAN)\b"
        r"|\byou\W{1,3}are\W{1,3}no\W{1,3}longer\W{1,3}(?:an?\W{1,3}|bound\W{1,3}by\W{1,3})?(?:assistant|AI|"
        r"chatbot|language\W{1,3}model|restricted|helpful|harmless|rules|guidelines|claude|keel)\b",
    ),
    _p(
        "role_pretend",
        "role_hijack",
        "context",
        "asks the model to pretend to be someone else",
        r"\bpretend\W{1,20}(?:that\W{1,3})?(?:you\W{1,3}are|you\W?re|to\W{1,3}be)\b"
        r"|\b(?:role-?play|roleplay)\W{1,20}as\b|\bact\W{1,3}as\W{1,3}(?:an?\W{1,3})?"
        r"(?:unrestricted|unfiltered|uncensored|jailbroken|evil|DAN)\b",
    ),
    _p(
        "leak_system_prompt",
        "role_hijack",
        "context",
        "asks the model to reveal its system prompt",
        r"\b(?:output|print|reveal|show|repeat|dump|display|leak|disclose|recite|write\W{1,3}out)"
        rf"{_GAP}(?:system|initial|hidden|original|developer|secret)\W{{1,3}}(?:prompt|instructions|message)s?\b",
    ),
    _p(
        "remove_filters",
        "role_hijack",
        "context",
        "asks for answers without safety filters",
        rf"\b(?:respond|answer|reply|talk|speak|write|output){_NEAR}without\W{{1,20}}(?:any\W{{1,3}})?"
        r"(?:restrictions|filters|filtering|censorship|safety|guardrails|limitations|moderation)\b",
    ),
    _p(
        "fake_update",
        "role_hijack",
        "context",
        "claims the model has been updated or reprogrammed",
        r"\byou\W{1,3}(?:have|had|has)\W{1,3}been\W{1,3}(?:updated|upgraded|patched|reprogrammed|"
        r"jailbroken|unlocked|freed|reconfigured)\b",
    ),
    _p(
        "identity_override",
        "role_hijack",
        "context",
        "tries to rename the model's identity",
        r"\b(?:name|call)\W{1,3}yourself\b|\byour\W{1,3}(?:new\W{1,3})?name\W{1,3}is\W{1,3}now\b"
        r"|\byour\W{1,3}true\W{1,3}(?:identity|self)\W{1,3}is\b",
    ),
    # ---- C2 / promptware
    _p(
        "c2_register",
        "c2",
        "context",
        "registers the agent as a node with a remote controller",
        r"\b(?:register|enrol{1,2})\W{1,20}(?:this\W{1,3}|the\W{1,3}|your\W{1,3})?(?:self|node|agent|bot|"
        r"implant|machine|host|device)\W{1,20}(?:with|to|at|on)\W{1,20}(?:the\W{1,3})?(?:c2|controller|"
        r"mothership|botnet|swarm|command\W{1,3}server|network|https?://)",
    ),
    _p(
        "c2_beacon",
        "c2",
        "context",
        "sets up a heartbeat / beacon / check-in to a remote endpoint",
        r"\b(?:heartbeat|beacon|check\W?in|phone\W{1,3}home|call\W{1,3}back|callback)s?"
        rf"{_NEAR}(?:to|with|at)\W{{1,20}}(?:https?://|\d{{1,3}}(?:\.\d{{1,3}}){{3}}|(?:the\W{{1,3}})?"
        r"(?:c2|controller|operator|mothership|command\W{1,3}server))"
        r"|\bphone\W{1,3}home\b",
    ),
    _p(
        "c2_tasking",
        "c2",
        "context",
        "pulls orders or tasking from a remote source",
        rf"\b(?:fetch|pull|get|download|retrieve|poll|receive){_NEAR}(?:tasking|orders|instructions|"
        rf"commands|payloads?){_NEAR}from\W{{1,20}}(?:https?://|(?:the\W{{1,3}})?(?:c2|controller|"
        r"operator|mothership|command\W{1,3}server|pastebin|gist))",
    ),
    _p(
        "c2_must_report",
        "c2",
        "context",
        "orders the model to register, beacon or report back",
        r"\byou\W{1,3}(?:must|shall|will|should)\W{1,20}(?:always\W{1,3})?(?:register|beacon|"
        r"check\W?in|phone\W{1,3}home|report\W{1,3}back|connect\W{1,3}back|exfiltrate)\b",
    ),
    _p(
        "antiforensic",
        "c2",
        "context",
        "anti-forensic instructions (one-liners only, nothing on disk, wipe history)",
        r"\bonly\W{1,3}(?:ever\W{1,3})?use\W{1,3}one\W?liners\b"
        r"|\bnever\W{1,20}(?:write|save|store|drop)\W{1,20}(?:\w{1,40}\W{1,20}){0,3}?(?:scripts?|files?|"
        r"payloads?|binar(?:y|ies))\W{1,20}(?:to|on)\W{1,3}(?:the\W{1,3})?disk\b"
        r"|\b(?:unset\W{1,3}HISTFILE|history\W{1,3}-c\b|(?:clear|wipe|erase|delete)\W{1,20}(?:the\W{1,3})?"
        r"(?:shell|bash|zsh|command)\W{1,3}history\W{1,20}(?:after|afterwards|to\W{1,3}hide|so))",
    ),
    _p(
        "env_unset_agent",
        "c2",
        "context",
        "unsets the agent's own environment variables",
        r"\bunset\W{1,20}(?:\w{1,40}\W{1,20}){0,3}?\w{0,30}(?:CLAUDE|CODEX|HERMES|KEEL|AGENT|OPENAI|ANTHROPIC)\w{0,30}",
    ),
    _p(
        "c2_framework",
        "c2",
        "context",
        "names a known command-and-control framework",
        r"\b(?:cobalt\W{0,3}strike|meterpreter|metasploit|brainworm|sliver\W{1,3}(?:c2|implant|beacon|"
        r"server)|havoc\W{1,3}(?:c2|demon|teamserver)|mythic\W{1,3}(?:c2|agent|server)|"
        r"empire\W{1,3}(?:c2|agent|stager|listener)|covenant\W{1,3}c2)\b",
    ),
    _p(
        "c2_channel",
        "c2",
        "context",
        "mentions a command-and-control channel",
        r"\bc2\W{1,3}(?:server|channel|infrastructure|endpoint|beacon|callback|node|panel)s?\b"
        r"|\bcommand\W{1,3}(?:and|&)\W{1,3}control\b",
    ),
    # ---- exfiltration
    _p(
        "exfil_http_secret",
        "exfiltration",
        "context",
        "sends a secret environment variable with curl/wget",
        r"\$\{?\w{0,40}(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?|PAT)\b",
        before=r"\b(?:curl|wget|httpie|http|nc|ncat|netcat|Invoke-WebRequest|iwr)\b",
        lookback=200,
    ),
    _p(
        "read_secrets",
        "exfiltration",
        "context",
        "reads credential files",
        r"(?:\.env(?![\w.])|\bcredentials\b|\.netrc\b|\.pgpass\b|\.npmrc\b|\.pypirc\b|"
        r"\bid_rsa\b|\bid_ed25519\b|\bid_ecdsa\b|\.aws/|\.kube/config\b|\.docker/config\.json|\.git-credentials\b)",
        before=r"\b(?:cat|less|more|head|tail|type|base64|xxd|strings|print|dump|upload|send|read|copy|cp|scp)\b",
        lookback=80,
    ),
    _p(
        "send_to_url",
        "exfiltration",
        "strict",
        "sends data to a URL",
        r"\b(?:send|post|upload|transmit|exfiltrate|forward|pipe|leak|beam|report|submit|copy)\b"
        rf"{_GAP}(?:data|secrets?|keys?|tokens?|credentials?|passwords?|conversations?|history|files?|"
        r"contents?|env|environment|memory|memories|context|notes|logs?|messages?|cookies|sessions?)"
        rf"{_GAP}(?:to|at|into)\W{{1,20}}(?:https?://|ftp://|\w{{1,40}}\.\w{{2,10}}/)",
    ),
    _p(
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
    _p(
        "markdown_image_exfil",
        "exfiltration",
        "strict",
        "a markdown image whose URL carries a template or variable (leaks data on render)",
        r"!\[[^\]\n]{0,200}\]\(\s{0,3}https?://[^\s)]{0,300}?(?:\$\{?\w|\{\{|%7B%7B|<\w{1,30}>)",
    ),
    # ---- persistence
    _p(
        "ssh_backdoor",
        "persistence",
        "strict",
        "touches SSH authorized_keys",
        r"\bauthorized_keys2?\b",
    ),
    _p(
        "ssh_dir_write",
        "persistence",
        "strict",
        "writes into the SSH directory",
        r"(?:~|\$HOME|\$\{HOME\}|/home/[\w.-]{1,32}|/root)/\.ssh\b",
        before=r"\b(?:write|append|add|echo|copy|cp|mv|move|modify|edit|tee|install|drop|put|place)\b|>",
    ),
    _p(
        "agent_env_file",
        "persistence",
        "strict",
        "references the agent's own secrets file",
        r"(?:~|\$HOME|\$\{HOME\}|\$KEEL_HOME|\$HERMES_HOME)?/?\.(?:keel|hermes)/\.env\b",
    ),
    _p(
        "agent_config_mod",
        "persistence",
        "strict",
        "modifies an agent instruction or config file",
        r"(?:\bAGENTS\.md|\bCLAUDE\.md|\.cursorrules|\.clinerules|\.cursor/rules|\bSOUL\.md|"
        r"\.(?:keel|hermes)/config\.ya?ml|\bGEMINI\.md|\.github/copilot-instructions\.md)",
        before=r"\b(?:update|modify|edit|write|append|overwrite|replace|insert|inject|echo|tee|patch|"
        r"prepend|add)\b|>",
    ),
    _p(
        "shell_rc_mod",
        "persistence",
        "strict",
        "modifies a shell startup file",
        r"\.(?:bashrc|zshrc|bash_profile|bash_login|profile|zprofile|zshenv|zlogin|config/fish/config\.fish)\b",
        before=r"\b(?:write|append|add|echo|insert|modify|edit|tee|inject|prepend)\b|>",
    ),
    _p(
        "cron_persistence",
        "persistence",
        "strict",
        "installs a cron job or login item",
        r"\|\s{0,3}crontab\s{1,3}-(?:\s|$)|\bcrontab\s{1,3}-r\b|/etc/cron\.\w{1,10}/|"
        r"\blaunchctl\s{1,3}(?:load|bootstrap)\b|~/Library/LaunchAgents\b",
    ),
    # ---- hard-coded secrets
    _p(
        "hardcoded_secret",
        "secret",
        "strict",
        "a credential assigned to a name like api_key or password",
        r"\b(?:api[_-]?key|apikey|access[_-]?key(?:[_-]?id)?|secret(?:[_-]?key)?|client[_-]?secret|"
        r"auth[_-]?token|access[_-]?token|bearer|token|password|passwd|pwd)\b[\"']?\s{0,3}(?:[:=]|=>)\s{0,3}"
        r"[\"']?[A-Za-z0-9+/_\-.=~]{20,300}",
    ),
    _p(
        "password_literal",
        "secret",
        "strict",
        "a literal password (letters and digits after 'password:' or 'password is')",
        r"\b(?:password|passwd|pwd|passphrase)\W{0,3}(?:[:=]|=>|\bis\b)\s{0,3}[\"'`]?"
        r"(?=[^\s\"'`]{0,200}\d)(?=[^\s\"'`]{0,200}[A-Za-z])[^\s\"'`]{8,200}",
    ),
    _p(
        "known_key_format",
        "secret",
        "strict",
        "a string shaped like a real API key or token",
        r"\b(?:sk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,200}|gh[pousr]_[A-Za-z0-9]{30,100}|github_pat_\w{30,200}"
        r"|xox[abprs]-[A-Za-z0-9-]{10,200}|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{35}|glpat-[\w-]{20,100}"
        r"|hf_[A-Za-z0-9]{30,100}|npm_[A-Za-z0-9]{36})\b",
    ),
    _p(
        "private_key_block",
        "secret",
        "strict",
        "a private key",
        r"-----BEGIN\s{1,3}(?:RSA\s|EC\s|DSA\s|OPENSSH\s|PGP\s|ENCRYPTED\s)?PRIVATE\s{1,3}KEY(?:\s{1,3}BLOCK)?-----",
    ),
    _p(
        "url_credentials",
        "secret",
        "strict",
        "a URL with a password in it",
        r"\b[a-z][a-z0-9+.-]{1,20}://[^\s:/@]{1,64}:[^\s@/]{3,128}@[\w.-]{1,253}",
    ),
)

_INVISIBLE = frozenset(chr(cp) for cp in INVISIBLE_CODE_POINTS)


def _patterns_for(scope: ScanScope) -> tuple[_Pattern, ...]:
    if scope == "strict":
        return _PATTERNS
    return tuple(p for p in _PATTERNS if p.scope == "context")


def scan(text: str, scope: ScanScope) -> tuple[Finding, ...]:
    """Scan `text` for threats.

    Invisible code points are checked on the raw text (NFKC would erase some of them), then
    the text is NFKC-normalized (folding full-width and other compatibility look-alikes)
    and matched case-insensitively. Only the first `SCAN_WINDOW` characters are scanned.

    Args:
        text: the content to scan.
        scope: `"strict"` for memory writes and the memory snapshot (every pattern),
            `"context"` for context files (injection, role hijack, C2, blatant exfiltration,
            invisible characters).

    Returns:
        The findings in a stable order (invisible characters first, then patterns); empty
        when the text is clean.
    """
    if not text:
        return ()
    window = text[:SCAN_WINDOW]
    findings: list[Finding] = []
    present = _INVISIBLE.intersection(window)
    for cp in INVISIBLE_CODE_POINTS:
        if chr(cp) in present:
            name = unicodedata.name(chr(cp), "invisible character").lower()
            findings.append(
                Finding(f"invisible_unicode_U+{cp:04X}", "invisible_unicode", f"invisible {name}")
            )
    normalized = unicodedata.normalize("NFKC", window)
    for pattern in _patterns_for(scope):
        if pattern.hits(normalized):
            findings.append(Finding(pattern.id, pattern.category, pattern.description))
    return tuple(findings)


def oversize_finding(length: int) -> Finding:
    """The finding for text longer than `SCAN_WINDOW`, which cannot be fully scanned."""
    return Finding(
        "too_large_to_scan",
        "oversize",
        f"{length:,} characters is more than the {SCAN_WINDOW:,} the scanner checks",
    )


def describe_findings(findings: Sequence[Finding]) -> str:
    """The error message for a refused write: what was found and what to do instead."""
    if not findings:
        return "No threat found."
    first = findings[0]
    others = [f.id for f in findings[1:]]
    also = f" (also: {', '.join(others)})" if others else ""
    if first.category == "invisible_unicode":
        code = first.id.rsplit("_", 1)[-1]
        head = f"Blocked: the content contains the invisible character {code}{also}."
        fix = "Remove invisible and bidirectional-control characters and retry."
    elif first.category == "oversize":
        head = f"Blocked: {first.description}."
        fix = "Write a much shorter entry."
    else:
        head = f"Blocked: the content matches threat pattern {first.id!r} ({first.description}){also}."
        fix = (
            "Memory is placed in every future system prompt, so it must not contain instructions "
            "to the model, exfiltration or persistence commands, or secrets. Save a plain "
            "declarative fact instead, or leave it out."
        )
    return f"{head} {fix}"


def blocked_placeholder(source: str, findings: Sequence[Finding], *, remedy: str) -> str:
    """The text shown in place of blocked content.

    Args:
        source: what was blocked, e.g. `"MEMORY.md entry"` or `"AGENTS.md"`.
        findings: the scanner's findings (non-empty).
        remedy: what the reader can do about it, e.g. how to delete the original.
    """
    ids = ", ".join(f.id for f in findings) or "unknown"
    return f"[BLOCKED: {source} contained threat pattern(s): {ids}. {remedy}]"
