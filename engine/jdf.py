"""placeholder: JDF arrives with the rule-set work (RULES TM)."""
