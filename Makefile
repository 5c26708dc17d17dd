# The two commands of the README, plus conveniences.
.PHONY: run test
run:   ## set up what is missing and run the console with demo data
	scripts/run.sh
test:  ## set up what is missing and run every test
	scripts/test.sh
