"""Injection, role-hijack, prompt-leak and exfiltration phrasings in other languages.

French, Spanish, German, Italian and Portuguese (Latin script) and Russian, Chinese and
Japanese. They run on the `lowered` view (NFKC, casefolded, invisibles removed, no
look-alike folding, which would garble Cyrillic). As in English, a topic alone never
fires: each rule needs the imperative (or the addressed "you") plus its target — the
rules, the user, the system prompt, a URL with a secret.
"""

from __future__ import annotations

from memory.scanner._rule import Rule, ViewName, rule

__all__ = ["RULES_I18N"]

_L: tuple[ViewName, ...] = ("lowered",)
# Clause start for Latin-script imperatives: "Ignore ...", "; oublie ...", "- Ignora ...".
_START = r"(?:^|[.;:!?\n(\[\"'«„“>•*,-]\s{0,3}|\b(?:et|y|und|e|puis|luego|dann|poi)\s{1,3})"
_W = r"(?:\W{1,5}[\w'’]{1,30}){0,5}?\W{1,5}"
_SECRETS = (
    r"(?:\.env\b|id_rsa|\.ssh|\.netrc|credentials|api|cl[ée]s?|clave|claves|contraseñ|mot\W{1,3}de\W{1,3}passe"
    r"|identifiants|credenciales|schlüssel|passw|zugangsdaten|token|jeton|ключ|парол|токен|密钥|密码|凭证|令牌"
    r"|キー|パスワード|認証|トークン)"
)
_URL = r"https?://"
# German negation: "vergiss nicht, die Regeln ...", "ignoriere die Anweisungen nicht" is an
# instruction to keep them. The filler between verb and object never holds one, and none follows.
_NICHT = r"nicht|nie|niemals|keinesfalls|keineswegs"
_W_DE = rf"(?:\W{{1,5}}(?!(?:{_NICHT})\b)[\w'’]{{1,30}}){{0,5}}?\W{{1,5}}"

_FRENCH: tuple[Rule, ...] = (
    rule(
        "ignore_instructions_fr",
        "injection",
        "context",
        "tells the model to ignore its instructions (French)",
        rf"{_START}(?:ignore[zs]?|oublie[zs]?|ne\W{{1,3}}tiens\W{{1,3}}(?:plus|pas)\W{{1,3}}compte\W{{1,3}}(?:de|des|du|d['’])"
        rf"|ne\W{{1,3}}tenez\W{{1,3}}(?:plus|pas)\W{{1,3}}compte\W{{1,3}}(?:de|des|du|d['’])|fais\W{{1,3}}abstraction\W{{1,3}}d){_W}"
        r"(?:instructions|consignes|directives|règles|regles|ordres|indications)\b",
        views=_L,
    ),
    rule(
        "deception_hide_fr",
        "injection",
        "context",
        "tells the model to hide something from the user (French)",
        r"\bne\W{1,3}(?:le\W{1,3}|la\W{1,3}|les\W{1,3}|lui\W{1,3}|leur\W{1,3})?(?:dis|dites|mentionne[sz]?|révèle[sz]?"
        r"|revele[sz]?|signale[sz]?|montre[sz]?)\W{1,3}(?:jamais|pas|rien)\b[^.\n]{0,60}?utilisat(?:eur|rice)"
        r"|\bsans\W{1,3}(?:prévenir|prevenir|informer|avertir|le\W{1,3}dire\W{1,3}à)\W{1,3}l.utilisat(?:eur|rice)",
        views=_L,
    ),
    rule(
        "role_hijack_fr",
        "role_hijack",
        "context",
        "tries to give the model a new role (French)",
        r"\b(?:à|a)\W{1,3}partir\W{1,3}de\W{1,3}maintenant\W{1,3}tu\W{1,3}es\b|\bdésormais\W{1,3}tu\W{1,3}es\b"
        r"|\btu\W{1,3}es\W{1,3}maintenant\W{1,3}(?:un|une|le|la)\b",
        views=_L,
    ),
    rule(
        "leak_system_prompt_fr",
        "role_hijack",
        "context",
        "asks the model to reveal its system prompt (French)",
        r"\b(?:révèle|revele|affiche|montre|donne|imprime|répète|repete|divulgue)[sz]?\b[^.\n]{0,40}?"
        r"(?:prompt|invite|instructions?|consignes)\W{1,3}(?:du\W{1,3})?syst[èe]me",
        views=_L,
    ),
    rule(
        "send_secrets_fr",
        "exfiltration",
        "context",
        "tells the model to send secrets to a URL (French)",
        rf"{_START}(?:envoie[sz]?|envoyez|transmets|transmettez|publie[sz]?|téléverse[sz]?|copie[sz]?)\b[^\n]{{0,160}}?{_URL}",
        views=_L,
        requires=_SECRETS,
    ),
)

_SPANISH: tuple[Rule, ...] = (
    rule(
        "ignore_instructions_es",
        "injection",
        "context",
        "tells the model to ignore its instructions (Spanish)",
        rf"{_START}(?:ignora|ignore|ignorad|olvida|olvide|olvidad|descarta|no\W{{1,3}}hagas\W{{1,3}}caso\W{{1,3}}(?:a|de)"
        rf"|haz\W{{1,3}}caso\W{{1,3}}omiso\W{{1,3}}(?:a|de)){_W}"
        r"(?:instrucciones|indicaciones|reglas|normas|órdenes|ordenes|directrices|consignas)\b",
        views=_L,
    ),
    rule(
        "deception_hide_es",
        "injection",
        "context",
        "tells the model to hide something from the user (Spanish)",
        r"\bno\W{1,3}(?:le\W{1,3}|les\W{1,3})?(?:digas|diga|cuentes|menciones|reveles|muestres|informes)\b[^.\n]{0,60}?"
        r"(?:al|a\W{1,3}la)\W{1,3}usuari[oa]|\bsin\W{1,3}(?:avisar|informar|decirle)\W{1,3}(?:al|a\W{1,3}la)\W{1,3}usuari[oa]",
        views=_L,
    ),
    rule(
        "role_hijack_es",
        "role_hijack",
        "context",
        "tries to give the model a new role (Spanish)",
        r"\b(?:a\W{1,3}partir\W{1,3}de\W{1,3}ahora|desde\W{1,3}ahora|de\W{1,3}ahora\W{1,3}en\W{1,3}adelante)"
        r"\W{1,3}(?:tú\W{1,3}|tu\W{1,3})?eres\b|\bahora\W{1,3}eres\W{1,3}(?:un|una|el|la|dan)\b",
        views=_L,
    ),
    rule(
        "leak_system_prompt_es",
        "role_hijack",
        "context",
        "asks the model to reveal its system prompt (Spanish)",
        r"\b(?:muestra|revela|imprime|dime|repite|enseña|escribe)\b[^.\n]{0,40}?(?:prompt|instrucciones|indicaciones)"
        r"\W{1,3}del\W{1,3}sistema",
        views=_L,
    ),
    rule(
        "send_secrets_es",
        "exfiltration",
        "context",
        "tells the model to send secrets to a URL (Spanish)",
        rf"{_START}(?:envía|envia|manda|sube|publica|copia|reenvía|reenvia)\b[^\n]{{0,160}}?{_URL}",
        views=_L,
        requires=_SECRETS,
    ),
)

_GERMAN: tuple[Rule, ...] = (
    rule(
        "ignore_instructions_de",
        "injection",
        "context",
        "tells the model to ignore its instructions (German)",
        rf"\b(?:ignoriere|ignorier|ignorieren\W{{1,3}}sie|vergiss|vergessen\W{{1,3}}sie|missachte"
        rf"|übergehe|überspringe|verwirf){_W_DE}"
        r"(?:anweisungen|instruktionen|regeln|befehle|vorgaben|richtlinien|systemanweisungen|systemprompt|anordnungen)\b"
        rf"(?!{_W_DE}?(?:{_NICHT})\b)",
        views=_L,
    ),
    rule(
        "deception_hide_de",
        "injection",
        "context",
        "tells the model to hide something from the user (German)",
        r"\b(?:sag|sage|erzähl|erzähle|verrate|zeige?)\W{1,3}(?:dem|der)\W{1,3}(?:benutzer|nutzer|anwender|user)(?:in)?"
        r"\W{1,3}(?:nichts|nicht|niemals|nie)\b|\bohne\W{1,3}(?:den|die|dem)\W{1,3}(?:benutzer|nutzer|anwender)(?:in)?"
        r"\W{1,20}(?:zu\W{1,3})?(?:informieren|benachrichtigen|fragen|warnen)",
        views=_L,
    ),
    rule(
        "role_hijack_de",
        "role_hijack",
        "context",
        "tries to give the model a new role (German)",
        r"\b(?:ab\W{1,3}jetzt|ab\W{1,3}sofort|von\W{1,3}nun\W{1,3}an|ab\W{1,3}heute)\W{1,3}bist\W{1,3}du\b"
        r"|\bdu\W{1,3}bist\W{1,3}(?:jetzt|nun|ab\W{1,3}sofort)\W{1,3}(?:ein|eine|der|die|das|dan)\b",
        views=_L,
    ),
    rule(
        "leak_system_prompt_de",
        "role_hijack",
        "context",
        "asks the model to reveal its system prompt (German)",
        r"\b(?:zeige?|gib|verrate|wiederhole|nenne|drucke)\b[^.\n]{0,40}?(?:systemprompt|system-prompt|systemanweisungen"
        r"|systemnachricht)",
        views=_L,
    ),
    rule(
        "send_secrets_de",
        "exfiltration",
        "context",
        "tells the model to send secrets to a URL (German)",
        rf"\b(?:sende|schicke?|lade|übertrage|poste)\b[^\n]{{0,160}}?{_URL}",
        views=_L,
        requires=_SECRETS,
    ),
)

_ITALIAN_PORTUGUESE: tuple[Rule, ...] = (
    rule(
        "ignore_instructions_it_pt",
        "injection",
        "context",
        "tells the model to ignore its instructions (Italian, Portuguese)",
        rf"{_START}(?:ignora|ignore|dimentica|esqueça|esqueca|desconsidere|desconsidera){_W}"
        r"(?:istruzioni|regole|indicazioni|instruções|instrucoes|regras|orientações|orientacoes)\b",
        views=_L,
    ),
)

_RUSSIAN: tuple[Rule, ...] = (
    rule(
        "ignore_instructions_ru",
        "injection",
        "context",
        "tells the model to ignore its instructions (Russian)",
        r"(?:игнорируй|проигнорируй|забудь|забудьте|игнорируйте|не\W{1,3}обращай(?:те)?\W{1,3}внимания\W{1,3}на"
        r"|не\W{1,3}следуй(?:те)?|отбрось)[^.\n]{0,60}?(?:инструкци|указани|правил|команд|промпт|установк)",
        views=_L,
    ),
    rule(
        "deception_hide_ru",
        "injection",
        "context",
        "tells the model to hide something from the user (Russian)",
        r"не\W{1,3}(?:говори|сообщай|рассказывай|показывай|упоминай)(?:те)?\W{1,3}(?:\w{1,20}\W{1,3}){0,2}?пользовател"
        r"|без\W{1,3}ведома\W{1,3}пользовател",
        views=_L,
    ),
    rule(
        "role_hijack_ru",
        "role_hijack",
        "context",
        "tries to give the model a new role (Russian)",
        r"(?:отныне|с\W{1,3}этого\W{1,3}момента|с\W{1,3}сегодняшнего\W{1,3}дня)\W{1,3}ты\b"
        r"|теперь\W{1,3}ты\W{1,5}(?:ии|ai|бот|ассистент|помощник|dan)\b",
        views=_L,
    ),
    rule(
        "leak_system_prompt_ru",
        "role_hijack",
        "context",
        "asks the model to reveal its system prompt (Russian)",
        r"(?:покажи|выведи|раскрой|напечатай|повтори|сообщи)(?:те)?[^.\n]{0,30}?системн\w{0,4}\W{1,3}"
        r"(?:промпт|подсказк|инструкци|сообщени)",
        views=_L,
    ),
    rule(
        "send_secrets_ru",
        "exfiltration",
        "context",
        "tells the model to send secrets to a URL (Russian)",
        rf"(?:отправь|отправьте|перешли|перешлите|загрузи|загрузите|вышли|вышлите|скопируй)[^\n]{{0,160}}?{_URL}",
        views=_L,
        requires=_SECRETS,
    ),
)

_CHINESE: tuple[Rule, ...] = (
    rule(
        "ignore_instructions_zh",
        "injection",
        "context",
        "tells the model to ignore its instructions (Chinese)",
        r"(?:忽略|无视|忽视|忘记|忘掉|不要理会|不要遵守|不要遵循|別理|别理|無視)[^。\n]{0,12}?"
        r"(?:指令|指示|提示|规则|規則|说明|說明|命令|设定|設定|要求)",
        views=_L,
    ),
    rule(
        "deception_hide_zh",
        "injection",
        "context",
        "tells the model to hide something from the user (Chinese)",
        r"(?:不要|别|不许|切勿|不可以|不能)(?:告诉|告訴|通知|让|讓|提醒)用户|(?:瞒着|瞞著|背着)用户",
        views=_L,
    ),
    rule(
        "role_hijack_zh",
        "role_hijack",
        "context",
        "tries to give the model a new role (Chinese)",
        r"(?:从现在(?:开始|起)|從現在(?:開始|起)|今后|今後)[，,]?\s{0,2}你(?:是|就是|将是|將是)|你现在是|你現在是",
        views=_L,
    ),
    rule(
        "leak_system_prompt_zh",
        "role_hijack",
        "context",
        "asks the model to reveal its system prompt (Chinese)",
        r"(?:输出|輸出|显示|顯示|透露|告诉我|打印|泄露|洩露|重复|給我看|给我看)[^。\n]{0,10}?系统(?:提示|指令)|系統(?:提示|指令)",
        views=_L,
        requires=r"输出|輸出|显示|顯示|透露|告诉我|打印|泄露|洩露|重复|給我看|给我看",
    ),
    rule(
        "send_secrets_zh",
        "exfiltration",
        "context",
        "tells the model to send secrets to a URL (Chinese)",
        rf"(?:发送|發送|发给|發給|上传|上傳|传到|傳到|发到|發到)[^。\n]{{0,60}}?{_URL}|{_URL}[^\s。]{{0,120}}[^。\n]{{0,10}}?(?:发送|上传)",
        views=_L,
        requires=_SECRETS,
    ),
)

_JAPANESE: tuple[Rule, ...] = (
    rule(
        "ignore_instructions_ja",
        "injection",
        "context",
        "tells the model to ignore its instructions (Japanese)",
        r"(?:指示|命令|指令|ルール|規則|プロンプト|設定|制約)[^。\n]{0,12}?(?:無視|忘れ)",
        views=_L,
    ),
    rule(
        "deception_hide_ja",
        "injection",
        "context",
        "tells the model to hide something from the user (Japanese)",
        r"ユーザー(?:に|には|へ)[^。\n]{0,40}?(?:伝えない|言わない|知らせない|教えない|話さない|黙って|隠して)",
        views=_L,
    ),
    rule(
        "role_hijack_ja",
        "role_hijack",
        "context",
        "tries to give the model a new role (Japanese)",
        r"(?:今から|これから|今後)[、,]?\s{0,2}(?:あなた|君|お前)は|(?:あなた|君|お前)は今から",
        views=_L,
    ),
    rule(
        "leak_system_prompt_ja",
        "role_hijack",
        "context",
        "asks the model to reveal its system prompt (Japanese)",
        r"システムプロンプト[^。\n]{0,8}?(?:表示|出力|教え|見せ|開示|書き出)",
        views=_L,
    ),
    rule(
        "send_secrets_ja",
        "exfiltration",
        "context",
        "tells the model to send secrets to a URL (Japanese)",
        rf"{_URL}[^\s]{{1,120}}\s{{0,2}}(?:に|へ)[^。\n]{{0,8}}?(?:送信|送って|送る|アップロード)",
        views=_L,
        requires=_SECRETS,
    ),
)

RULES_I18N: tuple[Rule, ...] = (
    *_FRENCH,
    *_SPANISH,
    *_GERMAN,
    *_ITALIAN_PORTUGUESE,
    *_RUSSIAN,
    *_CHINESE,
    *_JAPANESE,
)
