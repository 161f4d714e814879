"""The dictionary of known names is matched longest first, on ASCII boundaries, however many names it holds."""

from executor.retrieval.extraction import EntityExtractor


def counts(extractor, text):
    return {m.name: m.count for m in extractor.extract(text)}


def test_the_longest_known_name_wins_and_boundaries_hold():
    names = {
        k: (k.upper() if k.isascii() else k, "Software")
        for k in ("svc1", "svc10", "svc100x", "docker", "docker容器", "容器", "k8s")
    }
    x = EntityExtractor(names, allowed_types=["Software"])
    found = counts(x, "SVC10 calls svc1, not svc100; docker容器 and dockerfile and Docker. k8s上的容器")
    assert found == {"SVC10": 1, "SVC1": 1, "docker容器": 1, "DOCKER": 1, "K8S": 1, "容器": 1}


def test_thousands_of_names_match_as_the_few_do():
    names = {f"svc{i}": (f"Svc{i}", "Software") for i in range(5000)}
    x = EntityExtractor(names, allowed_types=["Software"])
    assert counts(x, "Svc42 calls svc4200 and svc4, then svc42x and xsvc7.") == {"Svc42": 1, "Svc4200": 1, "Svc4": 1}
