"""llmplan.hw"""
