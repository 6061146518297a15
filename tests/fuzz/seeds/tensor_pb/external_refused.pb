Bkj
locationweights.binp