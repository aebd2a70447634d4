"""The service suite: a service around the suite's stand-in providers.

Its checks register themselves when the suite's runner imports them: the
service's own rules (:mod:`._checks`, ``SVC-*``), the policies it declares
(:mod:`._policies`, ``POL-*``, ``OBS-*``), and this binding's abort signal
and errors (:mod:`._binding`, ``ABT-*``, ``ERR-*``). Nothing else in the
package uses a name of theirs.
"""

__all__: list[str] = []
