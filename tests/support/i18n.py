"""The pages' languages: where the Simplified Chinese catalog lives."""
from core.config import PROJECT_ROOT

CATALOG = PROJECT_ROOT / "translations" / "zh_CN" / "LC_MESSAGES" / "messages.po"
