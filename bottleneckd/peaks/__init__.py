"""peaks"""
