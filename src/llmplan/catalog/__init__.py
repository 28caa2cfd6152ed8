"""llmplan.catalog"""
