"""placeholder: Trump Millionaire arrives with the rule-set work (RULES TM)."""
