/* test_event.c: placeholder. */
int main(void)
{
	return 0;
}
