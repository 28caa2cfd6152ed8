"""llmplan.gui"""
