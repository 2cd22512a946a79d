"""(placeholder: operators of this primitive are being written)"""
