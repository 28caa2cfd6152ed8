"""llmplan.io"""
