"""llmplan.cli"""
