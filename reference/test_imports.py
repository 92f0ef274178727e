"""The reference's modules import one another in one direction: the base
never imports what builds on it (attnx_reference <- toolkits, user_module
<- user_toolkit), so that a reader knows which file is the base."""
import ast
import os
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))

# module -> the modules that build on it (directly or not), which it must
# not import, at the top or inside a function.
BASES = {
    "attnx_reference": {"toolkits", "user_module", "user_toolkit", "reference"},
    "toolkits": {"reference", "user_module", "user_toolkit"},
    "user_module": {"user_toolkit", "reference"},
    "user_toolkit": {"reference"},
}


def imported(module):
    with open(os.path.join(HERE, module + ".py")) as f:
        tree = ast.parse(f.read())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
    return names


class ImportDirection(unittest.TestCase):
    def test_bases_do_not_import_what_builds_on_them(self):
        for module, above in sorted(BASES.items()):
            with self.subTest(module=module):
                self.assertEqual(sorted(imported(module) & above), [], "%s imports a module built on it" % module)


if __name__ == "__main__":
    unittest.main()
