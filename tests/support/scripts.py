"""Restricted JavaScript for the sandbox and the product: a script that computes, scripts that only
the sandbox's wall clock stops, and the tenant's script executions counted."""
from core.redis import get_redis
from tests.support.studio import sample_definition

TOTAL = ("const {amount = 0, title} = input;\n"
         "const label = `${title.toUpperCase()} (${amount > 100 ? 'big' : 'small'})`;\n"
         "return {title: label, amount: amount * 2, priority: input?.priority ?? 'low'};")
# Native code that QuickJS's interrupt does not reach: a catastrophic regular expression and a
# join over a huge sparse array. Only the sandbox's wall-clock bound stops them.
REGEX = "return {m: /(a+)+b/.test('a'.repeat(28))};"
JOIN = "return {n: new Array(1e9).join('').length};"
CODE_DEFINITION = sample_definition(code={"language": "javascript", "source": TOTAL})


def script_executions(tenant) -> int:
    """Script executions this minute for the tenant, from the shared Redis counter."""
    keys = get_redis().keys(f"limit:fw:scripts:tenant:{tenant.id}:*")
    return sum(int(get_redis().get(key)) for key in keys)
